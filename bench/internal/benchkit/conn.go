package benchkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Conn is one keep-alive HTTP/1.1 connection to the server, for one closed-loop client: each
// request is written with a single syscall and the answer is parsed by net/http's own
// ReadResponse. It has none of http.Transport's per-request machinery (the connection pool,
// and the two goroutines a pooled connection hands every request and answer through), which
// took a fifth of this process's CPU in bench/turns' profile: on a 2-core machine shared with
// the service under test and Postgres, a load generator should cost as little as it can, as
// wrk's does. Not safe for concurrent use.
type Conn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
	req  []byte
	used time.Time // when the last answer was read, or when the connection was opened
	sent bool      // whether the connection has carried a request
}

// maxIdle is how long a Conn is reused after its last answer: well under the server's
// IdleTimeout (120 s), so that a request is never written to a connection the server is
// closing (a POST cannot be safely retried).
const maxIdle = 30 * time.Second

// maxUnused is how long a connection that has carried no request yet is kept: the server's
// ReadHeaderTimeout (5 s) runs from the connection's accept until its first request's headers
// are read, and a server closes a connection opened too early (between a Dial and the load
// phase, say) under the first request written to it.
const maxUnused = time.Second

// Dial opens a connection to the server (and reopens it whenever the server closes one).
func (s *Server) Dial() (*Conn, error) {
	c := &Conn{addr: strings.TrimPrefix(s.BaseURL, "http://")}
	return c, c.connect()
}

func (c *Conn) connect() error {
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		return err
	}
	c.c, c.br, c.used, c.sent = conn, bufio.NewReaderSize(conn, 16<<10), time.Now(), false
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.c == nil {
		return nil
	}
	return c.c.Close()
}

// Post sends body as JSON to path (already escaped) and reads the whole answer. A status other
// than want (any 2xx when want is 0) is an error "<status>: <body>".
func (c *Conn) Post(path string, body []byte, want int) ([]byte, error) {
	if c.c != nil && (time.Since(c.used) > maxIdle || !c.sent && time.Since(c.used) > maxUnused) {
		_ = c.fail(nil)
	}
	if c.c == nil {
		if err := c.connect(); err != nil {
			return nil, err
		}
	}
	c.req = append(c.req[:0], "POST "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: "...)
	c.req = append(c.req, c.addr...)
	c.req = append(c.req, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	c.req = strconv.AppendInt(c.req, int64(len(body)), 10)
	c.req = append(c.req, "\r\n\r\n"...)
	c.req = append(c.req, body...)
	if err := c.c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return nil, c.fail(err)
	}
	c.sent = true
	if _, err := c.c.Write(c.req); err != nil {
		return nil, c.fail(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, c.fail(err)
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, c.fail(err)
	}
	c.used = time.Now()
	if resp.Close {
		_ = c.fail(nil)
	}
	if (want == 0 && resp.StatusCode/100 != 2) || (want != 0 && resp.StatusCode != want) {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	return raw, nil
}

// fail drops the connection (the next Post reconnects) and returns err.
func (c *Conn) fail(err error) error {
	_ = c.c.Close()
	c.c = nil
	return err
}
