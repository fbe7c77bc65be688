package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// proxy is a TCP forwarder between the store and Postgres that a test can
// cut (every connection dropped, new ones refused) and restore on the same
// address: an outage without touching the shared test cluster.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("re-listen on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// TestPostgresOutageIs503AndRecovers cuts the database away under a running
// server: requests get 503 problems with Retry-After (never a 500),
// readiness fails, and service resumes without a restart.
func TestPostgresOutageIs503AndRecovers(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	u.Host = px.addr
	ctx := context.Background()
	store, err := pg.Open(ctx, u.String(), slog.New(slog.DiscardHandler), pg.WithMaxConns(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	e := setup(t, func(o *options) { o.store = store })
	e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
	if r, _ := e.turn("c", `{`+qa+`}`); r.status != 201 {
		t.Fatalf("before the outage: %d %s", r.status, r.body)
	}

	px.cut()
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/v1/conversations/c/turns", `{` + qa + `}`},
		{"GET", "/v1/conversations/c/entries", ""},
		{"GET", "/v1/memories/why", ""},
		{"POST", "/v1/memories", `{"id":"x","type":"episodic","strategy":{"kind":"window"}}`},
	} {
		r := e.do(req.method, req.path, "", req.body)
		if r.status != 503 || r.header.Get("Retry-After") == "" || r.json(t)["code"] != "unavailable" {
			t.Errorf("%s %s during the outage: %d %s (Retry-After %q)", req.method, req.path, r.status, r.body, r.header.Get("Retry-After"))
		}
	}
	if r := e.do("GET", "/readyz", "", ""); r.status != 503 {
		t.Errorf("readyz during the outage: %d", r.status)
	}

	px.restore()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, tr := e.turn("c", `{`+qa+`}`)
		if r.status == 201 {
			if tr.Turn != 2 {
				t.Errorf("first turn after recovery = %d, want 2", tr.Turn)
			}
			break
		}
		if r.status != 503 {
			t.Fatalf("during recovery: %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatal("did not recover within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := e.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Errorf("readyz after recovery: %d", r.status)
	}
}
