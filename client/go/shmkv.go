// Package shmkv is the Go binding of libshmkv, the client library of the
// shmkv daemon (shmkvd).
//
// A Client talks to one local shmkvd over its Unix socket. The cacheable
// reads (GET MGET EXISTS TYPE TTL PTTL STRLEN HGET HMGET HEXISTS HLEN
// SISMEMBER SMISMEMBER SCARD ZSCORE ZMSCORE ZCARD LLEN LINDEX, and HGETALL
// HKEYS HVALS SMEMBERS LRANGE ZRANGE of a small collection stored inline)
// are answered from the daemon's shared-memory cache when every record
// they need is there: no system call, no round trip. Every miss and every other command
// goes to the daemon over the socket. Replies are exactly what the daemon
// sends (RESP2).
//
//	c, err := shmkv.Open("/run/shmkv/shmkv.sock", nil)
//	if err != nil { ... }
//	defer c.Close()
//	c.Do("SET", "user:42", "ada")
//	v, err := c.Get("user:42") // from shared memory once cached
//
// A Client may be used by many goroutines at once.
package shmkv

/*
#cgo pkg-config: shmkv
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <shmkv.h>

// What one call into C hands back besides the replies it wrote. It lives in
// Go memory (a field of a pooled call buffer) and holds no Go pointer.
struct gsk_res {
	int rc;               // SHMKV_OK, SHMKV_NIL or a negative SHMKV_E* code
	int done;             // commands whose replies are complete in out
	size_t pos;           // bytes of out used; in: where to write next
	shmkv_reply *pending; // a reply that did not fit: Go calls gsk_put
	size_t need;          // its encoded size
	char *val;            // gsk_get: a value too large for out
	size_t vlen;
	char msg[256];        // shmkv_errmsg() of the failed call
};

// Replies are flattened into a Go buffer, so that Go reads them without a
// second crossing (to free them): one type byte, then a little-endian
// 8-byte length and the bytes (string, status, error), an 8-byte integer,
// nothing (nil), or an 8-byte count and the elements (array).
static size_t gsk_size(const shmkv_reply *r)
{
	size_t n = 1;
	switch (r->type) {
	case SHMKV_REPLY_STRING:
	case SHMKV_REPLY_STATUS:
	case SHMKV_REPLY_ERROR:
		return n + 8 + r->len;
	case SHMKV_REPLY_INTEGER:
		return n + 8;
	case SHMKV_REPLY_ARRAY:
		n += 8;
		for (size_t i = 0; i < r->elements; i++)
			n += gsk_size(r->element[i]);
		return n;
	default:
		return n;
	}
}

static char *gsk_u64(char *p, unsigned long long v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (char)(v >> (8 * i));
	return p + 8;
}

static char *gsk_enc(const shmkv_reply *r, char *p)
{
	*p++ = (char)r->type;
	switch (r->type) {
	case SHMKV_REPLY_STRING:
	case SHMKV_REPLY_STATUS:
	case SHMKV_REPLY_ERROR:
		p = gsk_u64(p, r->len);
		memcpy(p, r->str, r->len);
		return p + r->len;
	case SHMKV_REPLY_INTEGER:
		return gsk_u64(p, (unsigned long long)r->integer);
	case SHMKV_REPLY_ARRAY:
		p = gsk_u64(p, r->elements);
		for (size_t i = 0; i < r->elements; i++)
			p = gsk_enc(r->element[i], p);
		return p;
	default:
		return p;
	}
}

// shmkv_errmsg() is per thread, and a goroutine may run on another thread
// at its next crossing: so the message is copied in the same call.
static void gsk_fail(struct gsk_res *res, int rc)
{
	res->rc = rc;
	snprintf(res->msg, sizeof res->msg, "%s", shmkv_errmsg());
}

// The handle crosses as an integer: a pointer to an incomplete C type is
// boxed on the heap by every cgo pointer check, one allocation per call.
#define H(x) ((shmkv *)(x))

// Runs commands start..ncmd-1 one after the other through shmkv_command,
// all in one crossing. argcs[i] is command i's argument count; the
// arguments lie back to back in buf, lens giving each one's length. Stops
// at a failure (res->rc) or at a reply that does not fit (res->pending).
static int gsk_run(uintptr_t h, int ncmd, const int *argcs, const char *buf, const size_t *lens,
		   int start, char *out, size_t cap, struct gsk_res *res)
{
	const char *stack[16], **argv = stack;
	int argvcap = 16;
	size_t a = 0;
	const char *p = buf;
	for (int i = 0; i < start; i++)
		for (int j = 0; j < argcs[i]; j++)
			p += lens[a++];
	res->rc = SHMKV_OK;
	res->pending = NULL;
	res->done = start;
	for (int i = start; i < ncmd; i++) {
		int n = argcs[i];
		if (n > argvcap) {
			const char **m = malloc((size_t)n * sizeof *m);
			if (!m) {
				res->rc = SHMKV_ENOMEM;
				snprintf(res->msg, sizeof res->msg, "out of memory");
				break;
			}
			if (argv != stack)
				free(argv);
			argv = m;
			argvcap = n;
		}
		for (int j = 0; j < n; j++) {
			argv[j] = p;
			p += lens[a + j];
		}
		shmkv_reply *r;
		int rc = shmkv_command(H(h), &r, n, argv, lens + a);
		a += (size_t)n;
		if (rc != SHMKV_OK) {
			gsk_fail(res, rc);
			break;
		}
		size_t sz = gsk_size(r);
		if (sz > cap - res->pos) {
			res->pending = r;
			res->need = sz;
			break;
		}
		gsk_enc(r, out + res->pos);
		res->pos += sz;
		shmkv_reply_free(r);
		res->done = i + 1;
	}
	if (argv != stack)
		free(argv);
	return res->rc;
}

// Writes a reply gsk_run left pending (Go made room for it) and frees it.
static void gsk_put(shmkv_reply *r, char *out)
{
	gsk_enc(r, out);
	shmkv_reply_free(r);
}

// GET through shmkv_get, the value copied into out when it fits (else left
// in res->val for gsk_take).
static int gsk_get(uintptr_t h, const void *key, size_t klen, char *out, size_t cap,
		   struct gsk_res *res)
{
	char *v;
	size_t n;
	int rc = shmkv_get(H(h), key, klen, &v, &n);
	res->val = NULL;
	res->vlen = n;
	res->rc = rc;
	if (rc < 0) {
		gsk_fail(res, rc);
	} else if (rc == SHMKV_OK) {
		if (n <= cap) {
			memcpy(out, v, n);
			free(v);
		} else {
			res->val = v;
		}
	}
	return rc;
}

static void gsk_take(char *v, char *out, size_t n)
{
	memcpy(out, v, n);
	free(v);
}

static int gsk_open(uintptr_t *h, const char *path, const char *password, const char *user,
		    unsigned db, int no_cache, int timeout_ms, char *msg, size_t msglen)
{
	struct shmkv_opts o = {.password = password, .user = user, .db = db,
			       .no_cache = no_cache, .timeout_ms = timeout_ms};
	shmkv *p = NULL;
	int rc = shmkv_open(&p, path, &o);
	if (rc != SHMKV_OK)
		snprintf(msg, msglen, "%s", shmkv_errmsg());
	*h = (uintptr_t)p;
	return rc;
}

static void gsk_close(uintptr_t h) { shmkv_close(H(h)); }
static void gsk_stats(uintptr_t h, struct shmkv_stats *st) { shmkv_stats(H(h), st); }

// The cache's state, copied: shmkv_cache_error's string lasts only until
// the handle's next call, which another goroutine may make.
static int gsk_cache_error(uintptr_t h, char *msg, size_t msglen)
{
	const char *e = shmkv_cache_error(H(h));
	if (!e)
		return 0;
	snprintf(msg, msglen, "%s", e);
	return 1;
}
*/
import "C"

import (
	"reflect"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Options tune Open. The zero value (or a nil *Options) connects without
// authentication to database 0, maps the cache and waits without limit.
type Options struct {
	// Password, when not empty, is sent with AUTH before anything else
	// (the segment is handed over only after it).
	Password string
	// User names the ACL user AUTH authenticates (needs Password).
	User string
	// DB is the database selected on every connection.
	DB uint
	// NoCache keeps the cache unmapped: every command goes to the daemon.
	NoCache bool
	// Timeout bounds each send and receive on the socket (0: none).
	Timeout time.Duration
}

// Client is one libshmkv handle: a connection to the daemon and the
// shared-memory cache it maps. It is safe for concurrent use; cache hits
// take no lock, while commands sent to the daemon take turns on the one
// socket (goroutines that mostly write do better with a Client each).
type Client struct {
	// mu guards h against Close: every call holds it shared, Close
	// exclusively, so Close waits for calls in flight and a call never
	// uses a freed handle.
	mu sync.RWMutex
	h  C.uintptr_t // the shmkv handle; 0 once closed
}

// Stats are a Client's counters (approximate while goroutines share it).
type Stats struct {
	Hits     uint64 // commands answered from shared memory
	Misses   uint64 // cacheable reads the daemon answered
	Retries  uint64 // cache reads tried again because the daemon was writing
	Commands uint64 // commands sent to the daemon, misses included
	Attaches uint64 // segments mapped: 1 plus one per daemon restart seen
}

// Open connects to the shmkvd listening on the Unix socket socketPath,
// authenticates, selects the database and maps the shared-memory cache.
// A cache that cannot be mapped is not an error: see CacheError.
func Open(socketPath string, opts *Options) (*Client, error) {
	if opts == nil {
		opts = &Options{}
	}
	cpath := C.CString(socketPath)
	defer C.free(unsafe.Pointer(cpath))
	var cpass, cuser *C.char
	if opts.Password != "" || opts.User != "" {
		cpass = C.CString(opts.Password)
		defer C.free(unsafe.Pointer(cpass))
	}
	if opts.User != "" {
		cuser = C.CString(opts.User)
		defer C.free(unsafe.Pointer(cuser))
	}
	ms := 0
	if opts.Timeout > 0 {
		ms = int((opts.Timeout + time.Millisecond - 1) / time.Millisecond)
	}
	noCache := 0
	if opts.NoCache {
		noCache = 1
	}
	var h C.uintptr_t
	var msg [256]C.char
	rc := C.gsk_open(&h, cpath, cpass, cuser, C.uint(opts.DB), C.int(noCache), C.int(ms),
		&msg[0], C.size_t(len(msg)))
	if rc != C.SHMKV_OK {
		return nil, libError(int(rc), C.GoString(&msg[0]))
	}
	c := &Client{h: h}
	// A Client dropped without Close still gives back its socket and
	// mappings.
	runtime.SetFinalizer(c, (*Client).Close)
	return c, nil
}

// Close closes the connection and unmaps the cache. It waits for calls in
// flight on other goroutines; later calls return ErrClosed. Closing twice
// is harmless.
func (c *Client) Close() error {
	c.mu.Lock()
	h := c.h
	c.h = 0
	c.mu.Unlock()
	if h != 0 {
		C.gsk_close(h)
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

// Stats returns the handle's counters (shmkv_stats).
func (c *Client) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == 0 {
		return Stats{}
	}
	var st C.struct_shmkv_stats
	C.gsk_stats(c.h, &st)
	return Stats{
		Hits:     uint64(st.hits),
		Misses:   uint64(st.misses),
		Retries:  uint64(st.retries),
		Commands: uint64(st.commands),
		Attaches: uint64(st.attaches),
	}
}

// CacheError says why the shared-memory cache is not used ("" when it is):
// reads then all go to the daemon.
func (c *Client) CacheError() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == 0 {
		return ErrClosed.Error()
	}
	var msg [256]C.char
	if C.gsk_cache_error(c.h, &msg[0], C.size_t(len(msg))) == 0 {
		return ""
	}
	return C.GoString(&msg[0])
}

// ---- calls ----

// Reply types, as libshmkv numbers them (and gsk_enc writes them).
const (
	tString  = C.SHMKV_REPLY_STRING
	tArray   = C.SHMKV_REPLY_ARRAY
	tInteger = C.SHMKV_REPLY_INTEGER
	tNil     = C.SHMKV_REPLY_NIL
	tStatus  = C.SHMKV_REPLY_STATUS
	tError   = C.SHMKV_REPLY_ERROR
)

func csize(n int) C.size_t { return C.size_t(n) }

// call holds one call's buffers, reused through a pool so that a call
// allocates nothing but its result. The arguments are copied into args
// rather than passed in place: C takes an array of argument pointers, and
// cgo forbids handing C Go memory that holds Go pointers, so in-place
// passing would need a C-allocated array per call; copying a few short keys
// into a warm buffer costs less than that. Get, with one argument, passes
// its key in place (see Get).
type call struct {
	args  []byte // every argument, back to back
	lens  []C.size_t
	argcs []C.int // arguments per command
	out   []byte  // the flattened replies (see gsk_enc)
	res   C.struct_gsk_res
}

const (
	outSize = 4 << 10
	// A buffer grown past this for a large reply is dropped after the call
	// rather than kept in the pool.
	keepSize = 1 << 20
)

var calls = sync.Pool{New: func() interface{} {
	return &call{
		args:  make([]byte, 0, 256),
		lens:  make([]C.size_t, 0, 16),
		argcs: make([]C.int, 0, 4),
		out:   make([]byte, outSize),
	}
}}

func getCall() *call {
	b := calls.Get().(*call)
	b.args = b.args[:0]
	b.lens = b.lens[:0]
	b.argcs = b.argcs[:0]
	return b
}

func putCall(b *call) {
	if cap(b.args) > keepSize || len(b.out) > keepSize {
		return
	}
	calls.Put(b)
}

// begin starts a command of the batch in b.
func (b *call) begin() { b.argcs = append(b.argcs, 0) }

func (b *call) str(s string) {
	b.args = append(b.args, s...)
	b.lens = append(b.lens, C.size_t(len(s)))
	b.argcs[len(b.argcs)-1]++
}

func (b *call) bytes(p []byte) {
	b.args = append(b.args, p...)
	b.lens = append(b.lens, C.size_t(len(p)))
	b.argcs[len(b.argcs)-1]++
}

// reply returns a decoder over the replies run left in b.
func (b *call) reply() decoder { return decoder{buf: b.out[:b.res.pos]} }

// run sends every command in b through shmkv_command in one crossing (more
// only when a reply outgrows b.out) and leaves their flattened replies in
// b.out[:b.res.pos].
func (c *Client) run(b *call) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == 0 {
		return ErrClosed
	}
	if cap(b.args) == 0 {
		b.args = make([]byte, 0, 1)
	}
	b.res.pos = 0
	start := 0
	n := len(b.argcs)
	for {
		C.gsk_run(c.h, C.int(n), &b.argcs[0], (*C.char)(unsafe.Pointer(&b.args[:1][0])),
			&b.lens[0], C.int(start), (*C.char)(unsafe.Pointer(&b.out[0])),
			C.size_t(len(b.out)), &b.res)
		if b.res.rc < 0 {
			return libError(int(b.res.rc), C.GoString(&b.res.msg[0]))
		}
		if b.res.pending == nil {
			return nil
		}
		// A reply larger than the room left: grow, write it, go on.
		pos := int(b.res.pos)
		need := pos + int(b.res.need)
		if need < 2*len(b.out) {
			need = 2 * len(b.out)
		}
		grown := make([]byte, need)
		copy(grown, b.out[:pos])
		b.out = grown
		C.gsk_put(b.res.pending, (*C.char)(unsafe.Pointer(&b.out[pos])))
		b.res.pending = nil
		b.res.pos += b.res.need
		start = int(b.res.done) + 1
		if start == n {
			return nil
		}
	}
}

// do runs the one command in b and decodes its reply as Do does.
func (c *Client) do(b *call) (interface{}, error) {
	if err := c.run(b); err != nil {
		return nil, err
	}
	d := b.reply()
	v := d.value()
	if e, ok := v.(RedisError); ok {
		return nil, e
	}
	return v, nil
}

// Do runs any command and returns its reply as Go values: []byte for a
// bulk string, string for a status, int64, nil, and []interface{} for an
// array (whose elements may be RedisError values, as EXEC's). An error
// reply is returned as a RedisError error. Arguments may be string,
// []byte, integers, floats, bool (1 or 0) or nil (""); anything else is
// formatted with fmt.Sprint. Cacheable reads are served from shared memory
// on a hit.
func (c *Client) Do(args ...interface{}) (interface{}, error) {
	if len(args) == 0 {
		return nil, libError(CodeInvalid, "no command")
	}
	b := getCall()
	defer putCall(b)
	b.begin()
	for _, a := range args {
		b.arg(a)
	}
	return c.do(b)
}

// Get returns the value of key, ErrNil when it does not exist, or a
// RedisError (WRONGTYPE) when it holds another type. It goes through
// shmkv_get, libshmkv's fast path.
func (c *Client) Get(key string) ([]byte, error) {
	b := getCall()
	defer putCall(b)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.h == 0 {
		return nil, ErrClosed
	}
	// The key's bytes are passed in place, not copied: they hold no Go
	// pointer (which cgo allows) and C only reads them during the call.
	// unsafe.StringData is Go 1.20; this is the 1.19 spelling. An empty
	// string may have no data, so it points at a byte of b instead.
	kp := unsafe.Pointer((*reflect.StringHeader)(unsafe.Pointer(&key)).Data)
	if len(key) == 0 {
		kp = unsafe.Pointer(&b.out[0])
	}
	C.gsk_get(c.h, kp, C.size_t(len(key)), (*C.char)(unsafe.Pointer(&b.out[0])),
		C.size_t(len(b.out)), &b.res)
	runtime.KeepAlive(key)
	switch {
	case b.res.rc == C.SHMKV_NIL:
		return nil, ErrNil
	case b.res.rc < 0:
		return nil, libError(int(b.res.rc), C.GoString(&b.res.msg[0]))
	}
	v := make([]byte, int(b.res.vlen))
	if b.res.val != nil {
		if len(v) > 0 {
			C.gsk_take(b.res.val, (*C.char)(unsafe.Pointer(&v[0])), b.res.vlen)
		} else {
			C.free(unsafe.Pointer(b.res.val))
		}
	} else {
		copy(v, b.out[:len(v)])
	}
	return v, nil
}

// libError turns a failed libshmkv call into a Go error: an error reply
// into RedisError, anything else into *Error.
func libError(code int, msg string) error {
	if code == codeReply {
		return RedisError(msg)
	}
	if msg == "" {
		msg = C.GoString(C.shmkv_strerror(C.int(code)))
	}
	return &Error{Code: code, Msg: msg}
}
