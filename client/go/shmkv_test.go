package shmkv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shmkv/internal/resp"
	"shmkv/internal/testd"
)

// Every test talks to a real shmkvd; the shared one is started here, and
// the tests that stop or configure a daemon start their own.
var daemon *testd.Daemon

func TestMain(m *testing.M) {
	bin := testd.Bin()
	if bin == "" {
		fmt.Println("SHMKVD is not set: skipping (run client/go/test.sh BUILD_DIR)")
		os.Exit(0)
	}
	d, err := testd.Start(bin)
	if err != nil {
		fmt.Println("cannot start shmkvd:", err)
		os.Exit(1)
	}
	daemon = d
	code := m.Run()
	if err := d.Stop(); err != nil {
		fmt.Println(err)
		code = 1
	}
	os.Exit(code)
}

func plain(t testing.TB, sock string) *resp.Conn {
	t.Helper()
	p, err := resp.Dial(sock, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func open(t testing.TB, sock string, o *Options) *Client {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second // no test waits for ever
	}
	c, err := Open(sock, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func must(t testing.TB, p *resp.Conn, args ...interface{}) interface{} {
	t.Helper()
	v, err := p.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// Replies normalised for comparison: bulk strings as bulk, error replies
// (from either client) as errReply, so that a []byte and a string, or a
// nil and an empty bulk, never compare equal by accident.
type bulk string
type errReply string

func norm(v interface{}, err error) (interface{}, error) {
	var re RedisError
	var pe resp.Error
	switch {
	case errors.As(err, &re):
		return errReply(re), nil
	case errors.As(err, &pe):
		return errReply(pe), nil
	case err != nil:
		return nil, err
	}
	switch x := v.(type) {
	case []byte:
		return bulk(x), nil
	case RedisError:
		return errReply(x), nil
	case resp.Error:
		return errReply(x), nil
	case []interface{}:
		a := make([]interface{}, len(x))
		for i := range x {
			a[i], _ = norm(x[i], nil)
		}
		return a, nil
	}
	return v, nil
}

func show(v interface{}) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// same runs args through the binding three times (the first may miss and
// fill the cache, the others should hit) and once through the plain
// client, and fails unless every reply is identical. It returns the hits
// the binding counted.
func same(t *testing.T, c *Client, p *resp.Conn, args ...interface{}) uint64 {
	t.Helper()
	want, err := norm(p.Do(args...))
	if err != nil {
		t.Fatalf("plain %v: %v", args, err)
	}
	_, isErr := want.(errReply)
	before := c.Stats().Hits
	for i := 0; i < 3; i++ {
		got, err := norm(c.Do(args...))
		if err != nil {
			t.Fatalf("binding %v: %v", args, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: binding %s, plain client %s", args, show(got), show(want))
		}
	}
	if isErr {
		return ^uint64(0) // error replies come from the daemon by design
	}
	return c.Stats().Hits - before
}

func bigValue(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(strconv.Itoa(b.Len()))
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// load writes the data set every read test uses.
func load(t testing.TB, p *resp.Conn) {
	t.Helper()
	must(t, p, "FLUSHALL")
	must(t, p, "SET", "s:small", "hello")
	must(t, p, "SET", "s:empty", "")
	must(t, p, "SET", "s:bin", "a\x00b\r\nc\xff")
	must(t, p, "SET", "s:large", bigValue(300_000))
	must(t, p, "SET", "s:num", "12345")
	must(t, p, "SET", "ttl:s", "v", "EX", "1000")
	must(t, p, "HSET", "h:small", "f1", "v1", "f2", "", "f3", "x\x00y")
	must(t, p, "HSET", "ttl:h", "f", "v")
	must(t, p, "EXPIRE", "ttl:h", "1000")
	must(t, p, "SADD", "set:small", "a", "b", "c")
	must(t, p, "SADD", "set:ints", "1", "2", "3")
	must(t, p, "ZADD", "z:small", "1", "a", "-2.5", "b", "+inf", "c", "0.1", "d")
	must(t, p, "RPUSH", "l:small", "a", "b", "c")
	hargs := []interface{}{"HSET", "h:big"}
	sargs := []interface{}{"SADD", "set:big"}
	zargs := []interface{}{"ZADD", "z:big"}
	largs := []interface{}{"RPUSH", "l:big"}
	for i := 0; i < 1000; i++ {
		hargs = append(hargs, fmt.Sprintf("f%d", i), fmt.Sprintf("value-%d", i))
		sargs = append(sargs, fmt.Sprintf("m%d", i))
		zargs = append(zargs, strconv.FormatFloat(float64(i)*0.5, 'g', -1, 64), fmt.Sprintf("m%d", i))
		largs = append(largs, fmt.Sprintf("e%d", i))
	}
	must(t, p, hargs...)
	must(t, p, sargs...)
	must(t, p, zargs...)
	must(t, p, largs...)
}

var keys = []string{"s:small", "s:empty", "s:bin", "s:large", "s:num", "ttl:s", "h:small",
	"ttl:h", "h:big", "set:small", "set:ints", "set:big", "z:small", "z:big", "l:small",
	"l:big", "absent"}

// reads lists every served read over present keys, absent keys and keys of
// the wrong type.
func reads() [][]interface{} {
	var r [][]interface{}
	add := func(a ...interface{}) { r = append(r, a) }
	for _, k := range keys {
		add("GET", k)
		add("TYPE", k)
		add("EXISTS", k)
		add("STRLEN", k)
		add("HGET", k, "f1")
		add("HMGET", k, "f1", "nope", "f2")
		add("HEXISTS", k, "f1")
		add("HLEN", k)
		add("SISMEMBER", k, "a")
		add("SMISMEMBER", k, "a", "zz", "m5")
		add("SCARD", k)
		add("ZSCORE", k, "a")
		add("ZMSCORE", k, "a", "nope", "c")
		add("ZCARD", k)
		add("LLEN", k)
		add("LINDEX", k, 0)
		add("LINDEX", k, -1)
		add("HGETALL", k)
		add("HKEYS", k)
		add("HVALS", k)
		add("SMEMBERS", k)
		add("LRANGE", k, 0, -1)
		add("LRANGE", k, -2, 1)
		add("ZRANGE", k, 0, -1)
		add("ZRANGE", k, 1, 2, "WITHSCORES")
	}
	for _, k := range []string{"s:small", "s:large", "h:big", "absent"} {
		add("TTL", k)
		add("PTTL", k)
	}
	add("MGET", "s:small", "absent", "h:small", "s:bin", "s:empty", "s:large")
	add("EXISTS", "s:small", "absent", "h:big", "s:small")
	add("HGET", "h:big", "f500")
	add("HGET", "h:small", "f3")
	add("HGET", "h:small", "f2")
	hm := []interface{}{"HMGET", "h:big"}
	for i := 0; i < 1000; i += 1 {
		hm = append(hm, fmt.Sprintf("f%d", i))
	}
	add(hm...)
	add("SISMEMBER", "set:big", "m999")
	add("SISMEMBER", "set:ints", "2")
	add("SISMEMBER", "set:ints", "7")
	add("SMISMEMBER", "set:ints", "1", "x", "3")
	add("ZSCORE", "z:small", "b")
	add("ZSCORE", "z:small", "c")
	add("ZSCORE", "z:small", "d")
	add("ZSCORE", "z:big", "m7")
	add("ZMSCORE", "z:big", "m1", "m999", "nope")
	add("LINDEX", "l:small", 5)
	add("LINDEX", "l:small", -4)
	add("LINDEX", "l:small", "x")
	add("LINDEX", "l:big", 500)
	add("LINDEX", "l:big", -1000)
	add("GET") // arity errors come from the daemon, worded as Redis does
	add("HGET", "h:small")
	add("mget", "s:small") // command names in any case
	return r
}

func TestReadsMatchPlainClient(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	if e := c.CacheError(); e != "" {
		t.Fatalf("cache not used: %s", e)
	}
	info0 := localHits(t, p)
	st0 := c.Stats()
	var never []string
	for _, args := range reads() {
		if len(args) > 1 && (args[0] == "TTL" || args[0] == "PTTL") {
			continue // compared with a tolerance below
		}
		if same(t, c, p, args...) == 0 {
			never = append(never, fmt.Sprint(args[:min(len(args), 3)]))
		}
	}
	st := c.Stats()
	if st.Hits == st0.Hits {
		t.Fatal("no read came from shared memory")
	}
	t.Logf("stats %+v; reads without an error reply never served locally: %d of %d: %v",
		st, len(never), len(reads()), never)
	waitHits(t, p, info0)
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// TTL and PTTL count down between the two clients' reads, so they are
// compared within a bound.
func TestTTL(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	for _, k := range keys {
		for _, cmd := range []string{"TTL", "PTTL"} {
			for i := 0; i < 3; i++ {
				got, err := c.Do(cmd, k)
				want, perr := p.Do(cmd, k)
				if err != nil || perr != nil {
					if fmt.Sprint(err) != fmt.Sprint(perr) {
						t.Fatalf("%s %s: binding %v, plain %v", cmd, k, err, perr)
					}
					continue
				}
				g, w := got.(int64), want.(int64)
				slack := int64(1)
				if cmd == "PTTL" {
					slack = 1000
				}
				if (w < 0 || g < 0) && g != w || g-w > slack || w-g > slack {
					t.Fatalf("%s %s: binding %d, plain %d", cmd, k, g, w)
				}
				typed := c.TTL
				if cmd == "PTTL" {
					typed = c.PTTL
				}
				if n, err := typed(k); err != nil || (w < 0 && n != w) || n-w > slack || w-n > slack {
					t.Fatalf("typed %s %s: %d %v, plain %d", cmd, k, n, err, w)
				}
			}
		}
	}
}

// The typed calls return what the plain client returns, in Go types.
func TestTypedCalls(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	bytesOrNil := func(v interface{}) []byte {
		if v == nil {
			return nil
		}
		return v.([]byte)
	}
	check := func(what string, got interface{}, err error, want interface{}, werr error) {
		t.Helper()
		if fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("%s: error %v, plain %v", what, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %s, plain %s", what, show(got), show(want))
		}
	}
	asErr := func(err error) error {
		var pe resp.Error
		if errors.As(err, &pe) {
			return RedisError(pe)
		}
		return err
	}
	for round := 0; round < 2; round++ {
		for _, k := range keys {
			pv, perr := p.Do("GET", k)
			if perr == nil && pv == nil {
				perr = ErrNil
			}
			v, err := c.Get(k)
			check("Get "+k, v, err, bytesOrNil(pv), asErr(perr))

			pv, perr = p.Do("HGET", k, "f1")
			if perr == nil && pv == nil {
				perr = ErrNil
			}
			v, err = c.HGet(k, "f1")
			check("HGet "+k, v, err, bytesOrNil(pv), asErr(perr))

			pv, perr = p.Do("LINDEX", k, "1")
			if perr == nil && pv == nil {
				perr = ErrNil
			}
			v, err = c.LIndex(k, 1)
			check("LIndex "+k, v, err, bytesOrNil(pv), asErr(perr))

			pv, perr = p.Do("TYPE", k)
			ty, err := c.Type(k)
			check("Type "+k, ty, err, pv, asErr(perr))

			ints := map[string]func(string) (int64, error){
				"STRLEN": c.StrLen, "HLEN": c.HLen, "SCARD": c.SCard, "ZCARD": c.ZCard,
				"LLEN": c.LLen, "EXISTS": func(k string) (int64, error) { return c.Exists(k) },
			}
			for name, f := range ints {
				pv, perr := p.Do(name, k)
				n, err := f(k)
				check(name+" "+k, n, err, pv, asErr(perr))
			}
			bools := map[string]func(string, string) (bool, error){
				"HEXISTS": c.HExists, "SISMEMBER": c.SIsMember,
			}
			for name, f := range bools {
				for _, m := range []string{"f1", "a", "m3", "zz"} {
					pv, perr := p.Do(name, k, m)
					b, err := f(k, m)
					var want interface{}
					if perr == nil {
						want = pv.(int64) == 1
					}
					check(name+" "+k+" "+m, b, err, want, asErr(perr))
				}
			}
			pv, perr = p.Do("SMISMEMBER", k, "a", "zz", "m5")
			bs, err := c.SMIsMember(k, "a", "zz", "m5")
			var wantb []bool
			if perr == nil {
				for _, x := range pv.([]interface{}) {
					wantb = append(wantb, x.(int64) == 1)
				}
			}
			check("SMIsMember "+k, bs, err, wantb, asErr(perr))

			for _, m := range []string{"a", "b", "c", "d", "m7", "nope"} {
				pv, perr := p.Do("ZSCORE", k, m)
				var want interface{}
				if perr == nil {
					if pv == nil {
						perr = ErrNil
					} else {
						want, _ = strconv.ParseFloat(string(pv.([]byte)), 64)
					}
				}
				f, err := c.ZScore(k, m)
				check("ZScore "+k+" "+m, f, err, want, asErr(perr))
			}
			pv, perr = p.Do("ZMSCORE", k, "a", "nope", "c", "m3")
			zs, err := c.ZMScore(k, "a", "nope", "c", "m3")
			if fmt.Sprint(err) != fmt.Sprint(asErr(perr)) {
				t.Fatalf("ZMScore %s: %v, plain %v", k, err, perr)
			}
			if err == nil {
				for i, x := range pv.([]interface{}) {
					if (x == nil) != (zs[i] == nil) {
						t.Fatalf("ZMScore %s [%d]: %v, plain %v", k, i, zs[i], x)
					}
					if x != nil {
						w, _ := strconv.ParseFloat(string(x.([]byte)), 64)
						if w != *zs[i] {
							t.Fatalf("ZMScore %s [%d]: %v, plain %v", k, i, *zs[i], w)
						}
					}
				}
			}
		}
		mk := append([]string{}, keys...)
		pargs := []interface{}{"MGET"}
		for _, k := range mk {
			pargs = append(pargs, k)
		}
		pv, _ := p.Do(pargs...)
		vs, err := c.MGet(mk...)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range pv.([]interface{}) {
			if !reflect.DeepEqual(bytesOrNil(x), vs[i]) || (x == nil) != (vs[i] == nil) {
				t.Fatalf("MGet [%s]: %s, plain %s", mk[i], show(vs[i]), show(x))
			}
		}
		fields := []string{"f1", "nope", "f999", "f0"}
		pv, _ = p.Do("HMGET", "h:big", "f1", "nope", "f999", "f0")
		hs, err := c.HMGet("h:big", fields...)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range pv.([]interface{}) {
			if !reflect.DeepEqual(bytesOrNil(x), hs[i]) || (x == nil) != (hs[i] == nil) {
				t.Fatalf("HMGet [%s]: %s, plain %s", fields[i], show(hs[i]), show(x))
			}
		}
		if n, err := c.Exists("s:small", "absent", "s:small"); n != 2 || err != nil {
			t.Fatalf("Exists: %d %v", n, err)
		}
	}
	var re RedisError
	if _, err := c.Get("h:small"); !errors.As(err, &re) || !strings.HasPrefix(string(re), "WRONGTYPE") {
		t.Fatalf("Get of a hash: %v", err)
	}
	if c.Stats().Hits == 0 {
		t.Fatal("no typed read came from shared memory")
	}
}

// Commands that are not served locally go to the daemon and answer as
// they do for the plain client (each writes its own keys).
func TestDoOtherCommands(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	type client interface {
		Do(...interface{}) (interface{}, error)
	}
	script := func(cl client, pre string) []interface{} {
		var out []interface{}
		run := func(args ...interface{}) {
			v, err := norm(cl.Do(args...))
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			out = append(out, v)
		}
		run("SET", pre+"n", 42)
		run("INCRBY", pre+"n", int64(-50))
		run("SET", pre+"f", 1.5)
		run("INCRBYFLOAT", pre+"f", float32(0.25))
		run("SET", pre+"b", []byte{0, 1, 2})
		run("GET", pre+"b")
		run("HSET", pre+"h", "a", "1", "b", "2")
		run("HGETALL", pre+"h")
		run("LRANGE", "l:small", 0, -1)
		run("ZRANGE", "z:small", 0, -1, "WITHSCORES")
		run("SMEMBERS", "set:ints")
		run("NOSUCHCOMMAND", "x")
		run("INCR", "s:small")
		run("LPUSH", "h:small", "x")
		run("MULTI")
		run("SET", pre+"m", "1")
		run("INCR", "h:small")
		run("GET", pre+"m")
		run("EXEC")
		run("GET", pre+"m")
		run("DEL", pre+"n", pre+"f", "nothere")
		run("PING")
		run("ECHO", "")
		return out
	}
	got := script(c, "w:b:")
	want := script(p, "w:p:")
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("[%d] binding %s, plain %s", i, show(got[i]), show(want[i]))
			}
		}
		t.FailNow()
	}
	if _, err := c.Do(); err == nil {
		t.Fatal("Do() without a command succeeded")
	}
	// Arguments other than strings are formatted as Redis clients do.
	for _, a := range [][2]interface{}{{true, "1"}, {false, "0"}, {nil, ""}, {uint8(7), "7"},
		{-3, "-3"}, {0.1, "0.1"}, {[]byte("raw"), "raw"}, {struct{ A int }{4}, "{4}"}} {
		if _, err := c.Do("SET", "w:arg", a[0]); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get("w:arg"); err != nil || string(v) != a[1] {
			t.Fatalf("argument %#v: stored %q %v, want %q", a[0], v, err, a[1])
		}
	}
}

func TestBatch(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	var bt Batch
	rs := reads()
	for _, args := range rs {
		if len(args) > 1 && (args[0] == "TTL" || args[0] == "PTTL") {
			continue
		}
		if err := bt.Add(args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := bt.Add("SET", "k", "v"); err == nil {
		t.Fatal("Batch accepted a write")
	}
	var want []interface{}
	for _, args := range rs {
		if len(args) > 1 && (args[0] == "TTL" || args[0] == "PTTL") {
			continue
		}
		v, err := norm(p.Do(args...))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v)
	}
	for round := 0; round < 3; round++ {
		h0 := c.Stats().Hits
		got, err := c.RunBatch(&bt)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d replies for %d commands", len(got), len(want))
		}
		for i := range got {
			g, _ := norm(got[i], nil)
			if !reflect.DeepEqual(g, want[i]) {
				t.Fatalf("batch [%d]: %s, plain %s", i, show(g), show(want[i]))
			}
		}
		if round > 0 && c.Stats().Hits == h0 {
			t.Fatal("no batch read came from shared memory")
		}
	}
	bt.Reset()
	if got, err := c.RunBatch(&bt); got != nil || err != nil {
		t.Fatalf("empty batch: %v %v", got, err)
	}
}

// localHits reads shm_local_hits from INFO.
func localHits(t testing.TB, p *resp.Conn) int64 {
	t.Helper()
	v := must(t, p, "INFO", "shmcache").([]byte)
	for _, l := range strings.Split(string(v), "\r\n") {
		if strings.HasPrefix(l, "shm_local_hits:") {
			n, err := strconv.ParseInt(strings.TrimPrefix(l, "shm_local_hits:"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no shm_local_hits in INFO: %q", v)
	return 0
}

// waitHits waits (at most 5 s) for INFO's shm_local_hits to pass from.
func waitHits(t testing.TB, p *resp.Conn, from int64) int64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := localHits(t, p)
		if n > from {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("shm_local_hits stayed at %d", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestInfoCountsLocalHits(t *testing.T) {
	p := plain(t, daemon.Sock)
	must(t, p, "SET", "info:k", "v")
	c := open(t, daemon.Sock, nil)
	if _, err := c.Get("info:k"); err != nil { // may miss and fill the cache
		t.Fatal(err)
	}
	h0 := localHits(t, p)
	s0 := c.Stats().Hits
	for i := 0; i < 100; i++ {
		if v, err := c.Get("info:k"); err != nil || string(v) != "v" {
			t.Fatalf("Get: %q %v", v, err)
		}
	}
	served := c.Stats().Hits - s0
	if served == 0 {
		t.Fatal("Stats().Hits did not move: the reads did not come from shared memory")
	}
	h1 := waitHits(t, p, h0)
	t.Logf("100 Gets: %d local hits by Stats, shm_local_hits %d -> %d", served, h0, h1)
	if uint64(h1-h0) < served {
		// The counts are figures, not exact, only under concurrency.
		time.Sleep(50 * time.Millisecond)
		if h1 = localHits(t, p); uint64(h1-h0) < served {
			t.Fatalf("shm_local_hits moved by %d, the handle counted %d", h1-h0, served)
		}
	}
}

func TestExpiry(t *testing.T) {
	p := plain(t, daemon.Sock)
	c := open(t, daemon.Sock, nil)
	must(t, p, "SET", "exp:s", "soon gone")
	must(t, p, "HSET", "exp:h", "f", "v")
	start := time.Now()
	must(t, p, "PEXPIRE", "exp:s", "200")
	must(t, p, "PEXPIRE", "exp:h", "200")
	h0 := c.Stats().Hits
	for i := 0; i < 3; i++ {
		if v, err := c.Get("exp:s"); err != nil || string(v) != "soon gone" {
			t.Fatalf("before expiry: %q %v", v, err)
		}
		if v, err := c.HGet("exp:h", "f"); err != nil || string(v) != "v" {
			t.Fatalf("HGet before expiry: %q %v", v, err)
		}
		if n, err := c.PTTL("exp:s"); err != nil || n <= 0 || n > 200 {
			t.Fatalf("PTTL before expiry: %d %v", n, err)
		}
	}
	if time.Since(start) > 150*time.Millisecond {
		t.Skip("too slow to read before the expiry")
	}
	if c.Stats().Hits == h0 {
		t.Fatal("keys with an expiry were not served from shared memory")
	}
	time.Sleep(time.Until(start.Add(230 * time.Millisecond)))
	for _, args := range [][]interface{}{{"GET", "exp:s"}, {"HGET", "exp:h", "f"},
		{"EXISTS", "exp:s", "exp:h"}, {"PTTL", "exp:s"}, {"TTL", "exp:h"}, {"TYPE", "exp:s"},
		{"STRLEN", "exp:s"}, {"HLEN", "exp:h"}} {
		same(t, c, p, args...)
	}
	if _, err := c.Get("exp:s"); err != ErrNil {
		t.Fatalf("Get after expiry: %v", err)
	}
}

// A daemon stopped with SIGTERM and started again on the same directory
// and socket: the next call reconnects, maps the new segment, never reads
// the old one, and answers as the plain client does.
func TestDaemonRestart(t *testing.T) {
	d, err := testd.Start(testd.Bin())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	p, err := resp.Dial(d.Sock, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	must(t, p, "SET", "r:k", "before")
	must(t, p, "SET", "r:keep", "kept")
	p.Close()
	c := open(t, d.Sock, nil)
	for i := 0; i < 3; i++ {
		if v, err := c.Get("r:k"); err != nil || string(v) != "before" {
			t.Fatalf("Get: %q %v", v, err)
		}
	}
	if c.Stats().Hits == 0 {
		t.Fatal("no hit before the restart")
	}
	if err := d.Restart(); err != nil {
		t.Fatal(err)
	}
	p = plain(t, d.Sock)
	must(t, p, "SET", "r:k", "after") // the old segment still says "before"
	if v, err := c.Get("r:k"); err != nil || string(v) != "after" {
		t.Fatalf("first Get after the restart: %q %v", v, err)
	}
	same(t, c, p, "GET", "r:keep")
	same(t, c, p, "MGET", "r:k", "r:keep", "r:none")
	// The new segment serves hits (bounded wait: the first reads fill it).
	h0 := c.Stats().Hits
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Hits == h0 {
		if time.Now().After(deadline) {
			t.Fatalf("no hit from the new segment; stats %+v, cache: %q", c.Stats(), c.CacheError())
		}
		if v, err := c.Get("r:k"); err != nil || string(v) != "after" {
			t.Fatalf("Get: %q %v", v, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.Stats(); st.Attaches < 2 {
		t.Fatalf("the new segment was not mapped: %+v", st)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	p := plain(t, daemon.Sock)
	load(t, p)
	c := open(t, daemon.Sock, nil)
	want := map[string][]byte{}
	for _, k := range []string{"s:small", "s:bin", "s:empty", "s:large"} {
		v, _ := p.Get(k)
		want[k] = v
	}
	const workers, iters = 8, 1500
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	h0 := c.Stats().Hits
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			own := fmt.Sprintf("cc:%d", g)
			fail := func(f string, a ...interface{}) {
				errc <- fmt.Errorf("goroutine %d: "+f, append([]interface{}{g}, a...)...)
			}
			var bt Batch
			bt.Add("GET", "s:small")
			bt.Add("HGET", "h:big", "f7")
			bt.Add("SISMEMBER", "set:big", "m3")
			for i := 0; i < iters; i++ {
				k := []string{"s:small", "s:bin", "s:empty", "s:large"}[i%4]
				if v, err := c.Get(k); err != nil || !bytes.Equal(v, want[k]) {
					fail("Get %s: %v", k, err)
					return
				}
				f := fmt.Sprintf("f%d", (i*7+g)%1000)
				if v, err := c.HGet("h:big", f); err != nil || string(v) != "value-"+f[1:] {
					fail("HGet %s: %q %v", f, v, err)
					return
				}
				if vs, err := c.MGet("s:small", "absent"); err != nil || string(vs[0]) != "hello" || vs[1] != nil {
					fail("MGet: %v", err)
					return
				}
				if i%10 == 0 { // writes interleaved: read-your-writes per goroutine
					val := strconv.Itoa(i)
					if _, err := c.Do("SET", own, val); err != nil {
						fail("SET: %v", err)
						return
					}
					if v, err := c.Get(own); err != nil || string(v) != val {
						fail("Get own after SET: %q %v, want %s", v, err, val)
						return
					}
				}
				if i%50 == 0 {
					r, err := c.RunBatch(&bt)
					if err != nil || string(r[0].([]byte)) != "hello" || string(r[1].([]byte)) != "value-7" || r[2].(int64) != 1 {
						fail("batch: %v %v", r, err)
						return
					}
				}
			}
		}(g)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("goroutines did not finish within 90 s")
	}
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if c.Stats().Hits == h0 {
		t.Fatal("no concurrent read came from shared memory")
	}
}

func TestOptions(t *testing.T) {
	p := plain(t, daemon.Sock)
	must(t, p, "SELECT", "3")
	must(t, p, "SET", "db3:k", "in three")
	must(t, p, "SELECT", "0")
	must(t, p, "DEL", "db3:k")

	c := open(t, daemon.Sock, &Options{DB: 3})
	for i := 0; i < 3; i++ {
		if v, err := c.Get("db3:k"); err != nil || string(v) != "in three" {
			t.Fatalf("DB 3 Get: %q %v", v, err)
		}
	}
	if c.Stats().Hits == 0 {
		t.Fatal("no hit in database 3")
	}
	if _, err := open(t, daemon.Sock, nil).Get("db3:k"); err != ErrNil {
		t.Fatalf("database 0 sees database 3's key: %v", err)
	}

	nc := open(t, daemon.Sock, &Options{NoCache: true})
	for i := 0; i < 3; i++ {
		if _, err := nc.Get("s:small"); err != nil && err != ErrNil {
			t.Fatal(err)
		}
	}
	if st := nc.Stats(); st.Hits != 0 || st.Commands < 3 || nc.CacheError() == "" {
		t.Fatalf("NoCache: stats %+v, cache error %q", st, nc.CacheError())
	}

	if _, err := Open(daemon.Dir+"/no.sock", nil); err == nil {
		t.Fatal("Open of a missing socket succeeded")
	} else if e, ok := err.(*Error); !ok || e.Code != CodeConnect {
		t.Fatalf("Open of a missing socket: %#v", err)
	}

	nc.Close()
	nc.Close()
	if _, err := nc.Get("s:small"); err != ErrClosed {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := nc.Do("PING"); err != ErrClosed {
		t.Fatalf("Do after Close: %v", err)
	}
}

func TestPassword(t *testing.T) {
	d, err := testd.Start(testd.Bin(), "--requirepass", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if c, err := Open(d.Sock, &Options{Password: "wrong", Timeout: 10 * time.Second}); err == nil {
		c.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
	for _, o := range []*Options{{Password: "s3cret"}, {User: "default", Password: "s3cret"}} {
		c := open(t, d.Sock, o)
		if _, err := c.Do("SET", "k", "v"); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if v, err := c.Get("k"); err != nil || string(v) != "v" {
				t.Fatalf("Get: %q %v", v, err)
			}
		}
		if c.Stats().Hits == 0 || c.CacheError() != "" {
			t.Fatalf("no hit after AUTH: %+v %q", c.Stats(), c.CacheError())
		}
	}
	// Without a password the connection opens but every command is refused,
	// as Redis refuses them.
	c := open(t, d.Sock, nil)
	var re RedisError
	if _, err := c.Get("k"); !errors.As(err, &re) || !strings.HasPrefix(string(re), "NOAUTH") {
		t.Fatalf("Get without AUTH: %v", err)
	}
}
