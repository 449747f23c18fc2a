package shmkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// ErrNil is returned by the single-value reads (Get, HGet, LIndex, ZScore)
// when the key, field or element does not exist.
var ErrNil = errors.New("shmkv: nil reply")

// ErrClosed is returned by every call on a Client after Close.
var ErrClosed = errors.New("shmkv: client closed")

// RedisError is an error reply from the daemon, with its text exactly as
// Redis words it (for example "WRONGTYPE Operation against a key holding
// the wrong kind of value"). It is a reply, not a broken connection.
type RedisError string

func (e RedisError) Error() string { return string(e) }

// Error is a failure of libshmkv itself: the connection, the protocol,
// memory or a bad argument. After CodeIO the next call reconnects (a write
// that failed with CodeIO may or may not have run; reads are sent once more
// on a new connection by libshmkv itself).
type Error struct {
	Code int    // one of the Code constants (libshmkv's SHMKV_E* value)
	Msg  string // libshmkv's message (shmkv_errmsg)
}

func (e *Error) Error() string { return "shmkv: " + e.Msg }

// Codes of Error, as libshmkv numbers them.
const (
	CodeInvalid  = -1 // a bad argument
	CodeNoMemory = -2
	CodeIO       = -3 // the connection failed; the next call reconnects
	CodeProtocol = -4 // the daemon sent something unexpected
	CodeConnect  = -6 // cannot connect or authenticate
	codeReply    = -5 // an error reply: returned as RedisError instead
)

// decoder reads the replies gsk_enc flattened into a call's buffer.
type decoder struct {
	buf []byte
	pos int
}

func (d *decoder) u64() uint64 {
	v := binary.LittleEndian.Uint64(d.buf[d.pos:])
	d.pos += 8
	return v
}

// next reads one node: its type, the integer or element count, and for a
// string, status or error a view of its bytes (valid until the buffer is
// reused).
func (d *decoder) next() (t byte, n int64, s []byte) {
	t = d.buf[d.pos]
	d.pos++
	switch t {
	case tString, tStatus, tError:
		l := int(d.u64())
		s = d.buf[d.pos : d.pos+l : d.pos+l]
		d.pos += l
	case tInteger, tArray:
		n = int64(d.u64())
	}
	return
}

// value reads one reply as Do returns it, copying out of the buffer.
func (d *decoder) value() interface{} {
	t, n, s := d.next()
	switch t {
	case tString:
		return append(make([]byte, 0, len(s)), s...)
	case tStatus:
		return string(s)
	case tError:
		return RedisError(s)
	case tInteger:
		return n
	case tArray:
		a := make([]interface{}, n)
		for i := range a {
			a[i] = d.value()
		}
		return a
	default:
		return nil
	}
}

// unexpected is the error for a reply of a type the typed call does not
// expect: an error reply as itself, anything else as a protocol error.
func unexpected(t byte, s []byte, what string) error {
	if t == tError {
		return RedisError(s)
	}
	return &Error{Code: CodeProtocol, Msg: fmt.Sprintf("unexpected reply type %d to %s", t, what)}
}

// arg appends one Do argument, formatted as Redis clients usually do.
func (b *call) arg(a interface{}) {
	switch v := a.(type) {
	case string:
		b.str(v)
	case []byte:
		b.bytes(v)
	case int:
		b.int(int64(v))
	case int64:
		b.int(v)
	case int32:
		b.int(int64(v))
	case int16:
		b.int(int64(v))
	case int8:
		b.int(int64(v))
	case uint:
		b.uint(uint64(v))
	case uint64:
		b.uint(v)
	case uint32:
		b.uint(uint64(v))
	case uint16:
		b.uint(uint64(v))
	case uint8:
		b.uint(uint64(v))
	case float64:
		b.float(v, 64)
	case float32:
		b.float(float64(v), 32)
	case bool:
		if v {
			b.str("1")
		} else {
			b.str("0")
		}
	case nil:
		b.str("")
	default:
		b.str(fmt.Sprint(v))
	}
}

// The number formats append straight into the argument buffer.
func (b *call) int(v int64) {
	n := len(b.args)
	b.args = strconv.AppendInt(b.args, v, 10)
	b.done(n)
}

func (b *call) uint(v uint64) {
	n := len(b.args)
	b.args = strconv.AppendUint(b.args, v, 10)
	b.done(n)
}

func (b *call) float(v float64, bits int) {
	n := len(b.args)
	b.args = strconv.AppendFloat(b.args, v, 'g', -1, bits)
	b.done(n)
}

// done records the argument appended to args since offset n.
func (b *call) done(n int) {
	b.lens = append(b.lens, csize(len(b.args)-n))
	b.argcs[len(b.argcs)-1]++
}
