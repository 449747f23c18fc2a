// Package resp is a minimal RESP2 client over a Unix socket, written with
// the standard library alone. The binding's tests use it as the plain
// client whose replies every binding read is compared with, and the bench
// reader uses it for --mode plain. It sends one request at a time and waits
// for its reply, as an ordinary Redis client does.
//
// Replies come back as the binding's Do returns them: []byte for a bulk
// string, string for a status, int64, nil, []interface{} for an array, and
// Error for an error reply.
package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Error is an error reply, with the daemon's text.
type Error string

func (e Error) Error() string { return string(e) }

// Conn is one connection. It is not safe for concurrent use.
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	timeout time.Duration
	num     []byte // scratch for formatting lengths
}

// Dial connects to the Unix socket at path. timeout bounds the connect and
// every later request and reply (0: none).
func Dial(path string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 16<<10),
		timeout: timeout}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and returns its reply. An error reply is returned
// as the error (an Error), as the binding's Do does; nested error replies
// (inside an array) are Error elements.
func (c *Conn) Do(args ...interface{}) (interface{}, error) {
	if err := c.Send(args...); err != nil {
		return nil, err
	}
	v, err := c.Receive()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(Error); ok {
		return nil, e
	}
	return v, nil
}

// Send writes one command without waiting for its reply.
func (c *Conn) Send(args ...interface{}) error {
	if c.timeout > 0 {
		if err := c.c.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return err
		}
	}
	c.header('*', len(args))
	for _, a := range args {
		switch v := a.(type) {
		case string:
			c.header('$', len(v))
			c.w.WriteString(v)
		case []byte:
			c.header('$', len(v))
			c.w.Write(v)
		default:
			s := fmt.Sprint(v)
			c.header('$', len(s))
			c.w.WriteString(s)
		}
		c.w.WriteString("\r\n")
	}
	return c.w.Flush()
}

func (c *Conn) header(kind byte, n int) {
	c.num = append(c.num[:0], kind)
	c.num = strconv.AppendInt(c.num, int64(n), 10)
	c.num = append(c.num, '\r', '\n')
	c.w.Write(c.num)
}

// Receive reads one reply; an error reply is returned as an Error value
// with a nil error.
func (c *Conn) Receive() (interface{}, error) {
	line, err := c.line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("resp: empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return string(body), nil
	case '-':
		return Error(body), nil
	case ':':
		return parseInt(body)
	case '$':
		n, err := parseInt(body)
		if err != nil || n < 0 {
			return nil, err
		}
		v := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, v); err != nil {
			return nil, err
		}
		if v[n] != '\r' || v[n+1] != '\n' {
			return nil, errors.New("resp: bulk string not ended by CRLF")
		}
		return v[:n:n], nil
	case '*':
		n, err := parseInt(body)
		if err != nil || n < 0 {
			return nil, err
		}
		a := make([]interface{}, n)
		for i := range a {
			if a[i], err = c.Receive(); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	return nil, fmt.Errorf("resp: unexpected reply %q", line)
}

// line reads one CRLF-terminated line, without the CRLF. The slice is valid
// until the next read.
func (c *Conn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("resp: reply line too long")
	}
	if err != nil {
		return nil, err
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return nil, errors.New("resp: line not ended by CRLF")
	}
	return l[:len(l)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resp: bad number %q", b)
	}
	return n, nil
}

// Get is GET key through Do: the value, or nil for an absent key.
func (c *Conn) Get(key string) ([]byte, error) {
	v, err := c.Do("GET", key)
	if err != nil || v == nil {
		return nil, err
	}
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("resp: GET replied %T", v)
	}
	return b, nil
}
