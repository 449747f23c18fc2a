package shmkv

import (
	"strconv"
	"strings"
)

// The typed reads below are the cacheable commands libshmkv answers from
// shared memory on a hit (the daemon answers a miss). Each is one call
// into libshmkv, with every argument passed at once: MGet, HMGet,
// SMIsMember and ZMScore cross into C once however many keys or fields
// they name.

// exec runs the command name with args and returns the decoder over its
// reply. The caller gives b back with putCall once done with the decoder.
func (c *Client) exec(b *call, name string, first []string, rest []string) (decoder, error) {
	b.begin()
	b.str(name)
	for _, a := range first {
		b.str(a)
	}
	for _, a := range rest {
		b.str(a)
	}
	if err := c.run(b); err != nil {
		return decoder{}, err
	}
	return b.reply(), nil
}

func (c *Client) intCmd(name string, args []string, rest []string) (int64, error) {
	b := getCall()
	defer putCall(b)
	d, err := c.exec(b, name, args, rest)
	if err != nil {
		return 0, err
	}
	t, n, s := d.next()
	if t != tInteger {
		return 0, unexpected(t, s, name)
	}
	return n, nil
}

func (c *Client) bulkCmd(name string, args []string) ([]byte, error) {
	b := getCall()
	defer putCall(b)
	d, err := c.exec(b, name, args, nil)
	if err != nil {
		return nil, err
	}
	t, _, s := d.next()
	switch t {
	case tString:
		return append(make([]byte, 0, len(s)), s...), nil
	case tNil:
		return nil, ErrNil
	}
	return nil, unexpected(t, s, name)
}

func (c *Client) bulksCmd(name string, key string, rest []string) ([][]byte, error) {
	b := getCall()
	defer putCall(b)
	d, err := c.exec(b, name, []string{key}, rest)
	if err != nil {
		return nil, err
	}
	t, n, s := d.next()
	if t != tArray {
		return nil, unexpected(t, s, name)
	}
	out := make([][]byte, n)
	for i := range out {
		t, _, s := d.next()
		switch t {
		case tString:
			out[i] = append(make([]byte, 0, len(s)), s...)
		case tNil:
		default:
			return nil, unexpected(t, s, name)
		}
	}
	return out, nil
}

// MGet returns the values of keys, a nil element for each key that does
// not exist or holds another type (as Redis's MGET).
func (c *Client) MGet(keys ...string) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, libError(CodeInvalid, "MGET needs a key")
	}
	return c.bulksCmd("MGET", keys[0], keys[1:])
}

// HGet returns the value of field in the hash key, or ErrNil.
func (c *Client) HGet(key, field string) ([]byte, error) {
	return c.bulkCmd("HGET", []string{key, field})
}

// HMGet returns the values of fields in the hash key, nil for each absent
// one.
func (c *Client) HMGet(key string, fields ...string) ([][]byte, error) {
	return c.bulksCmd("HMGET", key, fields)
}

// LIndex returns the element at index of the list key (negative counts
// from the end), or ErrNil.
func (c *Client) LIndex(key string, index int64) ([]byte, error) {
	var num [20]byte
	return c.bulkCmd("LINDEX", []string{key, string(strconv.AppendInt(num[:0], index, 10))})
}

// Exists returns how many of keys exist (a key named twice counts twice).
func (c *Client) Exists(keys ...string) (int64, error) {
	return c.intCmd("EXISTS", keys, nil)
}

// TTL returns the seconds key has left to live: -1 without an expiry, -2
// when it does not exist (as Redis's TTL).
func (c *Client) TTL(key string) (int64, error) { return c.intCmd("TTL", []string{key}, nil) }

// PTTL is TTL in milliseconds.
func (c *Client) PTTL(key string) (int64, error) { return c.intCmd("PTTL", []string{key}, nil) }

// StrLen returns the length of the string at key (0 when absent).
func (c *Client) StrLen(key string) (int64, error) {
	return c.intCmd("STRLEN", []string{key}, nil)
}

// HLen returns the number of fields of the hash key.
func (c *Client) HLen(key string) (int64, error) { return c.intCmd("HLEN", []string{key}, nil) }

// SCard returns the number of members of the set key.
func (c *Client) SCard(key string) (int64, error) { return c.intCmd("SCARD", []string{key}, nil) }

// ZCard returns the number of members of the sorted set key.
func (c *Client) ZCard(key string) (int64, error) { return c.intCmd("ZCARD", []string{key}, nil) }

// LLen returns the length of the list key.
func (c *Client) LLen(key string) (int64, error) { return c.intCmd("LLEN", []string{key}, nil) }

// HExists reports whether the hash key has field.
func (c *Client) HExists(key, field string) (bool, error) {
	n, err := c.intCmd("HEXISTS", []string{key, field}, nil)
	return n == 1, err
}

// SIsMember reports whether member is in the set key.
func (c *Client) SIsMember(key, member string) (bool, error) {
	n, err := c.intCmd("SISMEMBER", []string{key, member}, nil)
	return n == 1, err
}

// SMIsMember reports, for each of members, whether it is in the set key.
func (c *Client) SMIsMember(key string, members ...string) ([]bool, error) {
	b := getCall()
	defer putCall(b)
	d, err := c.exec(b, "SMISMEMBER", []string{key}, members)
	if err != nil {
		return nil, err
	}
	t, n, s := d.next()
	if t != tArray {
		return nil, unexpected(t, s, "SMISMEMBER")
	}
	out := make([]bool, n)
	for i := range out {
		t, v, s := d.next()
		if t != tInteger {
			return nil, unexpected(t, s, "SMISMEMBER")
		}
		out[i] = v == 1
	}
	return out, nil
}

// Type returns the type of key: "string", "hash", "set", "zset", "list",
// "stream" or "none".
func (c *Client) Type(key string) (string, error) {
	b := getCall()
	defer putCall(b)
	d, err := c.exec(b, "TYPE", []string{key}, nil)
	if err != nil {
		return "", err
	}
	t, _, s := d.next()
	if t != tStatus {
		return "", unexpected(t, s, "TYPE")
	}
	return string(s), nil
}

// ZScore returns the score of member in the sorted set key, or ErrNil.
func (c *Client) ZScore(key, member string) (float64, error) {
	v, err := c.bulkCmd("ZSCORE", []string{key, member})
	if err != nil {
		return 0, err
	}
	return parseScore(v)
}

// ZMScore returns the scores of members in the sorted set key, a nil
// element for each absent member.
func (c *Client) ZMScore(key string, members ...string) ([]*float64, error) {
	vs, err := c.bulksCmd("ZMSCORE", key, members)
	if err != nil {
		return nil, err
	}
	out := make([]*float64, len(vs))
	for i, v := range vs {
		if v == nil {
			continue
		}
		f, err := parseScore(v)
		if err != nil {
			return nil, err
		}
		out[i] = &f
	}
	return out, nil
}

// parseScore reads a score as Redis writes it ("1.5", "inf", "-inf").
func parseScore(v []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, &Error{Code: CodeProtocol, Msg: "not a score: " + strconv.Quote(string(v))}
	}
	return f, nil
}

// ---- batches ----

// cacheable names the reads a Batch accepts: those libshmkv may answer
// from shared memory. They can all be sent again, so a batch that fails
// half way is simply run again.
var cacheable = map[string]bool{
	"GET": true, "MGET": true, "EXISTS": true, "TYPE": true, "TTL": true, "PTTL": true,
	"STRLEN": true, "HGET": true, "HMGET": true, "HEXISTS": true, "HLEN": true,
	"SISMEMBER": true, "SMISMEMBER": true, "SCARD": true, "ZSCORE": true,
	"ZMSCORE": true, "ZCARD": true, "LLEN": true, "LINDEX": true,
	"HGETALL": true, "HKEYS": true, "HVALS": true, "SMEMBERS": true, "LRANGE": true,
	"ZRANGE": true,
}

// Batch is a list of cacheable reads that RunBatch runs with a single call
// into C: a helper in this package's C preamble (gsk_run) loops over the
// commands with shmkv_command and writes every reply into one Go buffer,
// so a batch of N reads costs one cgo crossing instead of N (plus one per
// reply too large for the buffer). Each read is served from shared memory
// on a hit and by the daemon otherwise, as with Do.
//
// A Batch keeps its buffers between runs (Reset empties it); it must not be
// used by two goroutines at once.
type Batch struct {
	b *call
}

// Add appends a command (name first, arguments as for Do). It returns an
// error, and adds nothing, for a command that is not one of the cacheable
// reads.
func (bt *Batch) Add(args ...interface{}) error {
	if len(args) == 0 {
		return libError(CodeInvalid, "no command")
	}
	name, ok := args[0].(string)
	if !ok || !cacheable[strings.ToUpper(name)] {
		return libError(CodeInvalid, "not a cacheable read: "+strings.ToUpper(toString(args[0])))
	}
	if bt.b == nil {
		bt.b = &call{out: make([]byte, outSize)}
	}
	bt.b.begin()
	for _, a := range args {
		bt.b.arg(a)
	}
	return nil
}

// Len returns the number of commands in the batch.
func (bt *Batch) Len() int {
	if bt.b == nil {
		return 0
	}
	return len(bt.b.argcs)
}

// Reset empties the batch, keeping its buffers.
func (bt *Batch) Reset() {
	if bt.b != nil {
		bt.b.args = bt.b.args[:0]
		bt.b.lens = bt.b.lens[:0]
		bt.b.argcs = bt.b.argcs[:0]
	}
}

// RunBatch runs every command of bt and returns their replies in order, as
// Do returns them, except that an error reply (such as WRONGTYPE) is a
// RedisError element of the result rather than the call's error. The
// error is for a failure of the connection, which fails the whole batch.
func (c *Client) RunBatch(bt *Batch) ([]interface{}, error) {
	if bt.Len() == 0 {
		return nil, nil
	}
	if err := c.run(bt.b); err != nil {
		return nil, err
	}
	d := bt.b.reply()
	out := make([]interface{}, len(bt.b.argcs))
	for i := range out {
		out[i] = d.value()
	}
	return out, nil
}

func toString(v interface{}) string {
	var b call
	b.begin()
	b.arg(v)
	return string(b.args)
}
