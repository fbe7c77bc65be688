package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientDisconnectCancelsItsQuery blocks a turn write on the
// conversation's row lock (held from a separate connection), lets the client
// give up, and checks on pg_stat_activity that the server's backend stops
// waiting on that lock shortly after: the request's context reaches the
// query. Nothing is written, and the server logs no 5xx.
func TestClientDisconnectCancelsItsQuery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Long database timeouts: only the client's disconnect can end the wait.
	store, err := pg.Open(ctx, dsn, logger, pg.WithMaxConns(4), pg.WithLockTimeout(60*time.Second), pg.WithStatementTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.NewServer(server.Deps{
		App: app.New(store, core.Capabilities{
			Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true}},
		}, app.WithEmbedders(hash)),
		Logger:         logger,
		RequestTimeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(specGate(t, h))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv}
	e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
	if r, tr := e.turn("c", `{`+qa+`}`); r.status != 201 || tr.Turn != 1 {
		t.Fatalf("turn 1: %d %s", r.status, r.body)
	}

	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		return c
	}
	holder, observer := connect(), connect()
	lockTx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lockTx.Rollback(context.Background()) }()
	// The namespace's turn-write lock, as internal/store/pg takes it (lockNamespaceSQL).
	ns := core.Identity{Tenant: core.DefaultTenant, ConversationID: "c"}.Namespace()
	if _, err := lockTx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7317))`, core.DefaultTenant, ns); err != nil {
		t.Fatalf("lock the conversation: %v", err)
	}
	holderPID := holder.PgConn().PID()

	// waiting counts the backends of this database, other than the
	// holder's and the observer's, that are running a statement blocked on
	// a lock.
	waiting := func() int {
		var n int
		err := observer.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1
			  AND state = 'active' AND wait_event_type = 'Lock'`, holderPID).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	poll := func(cond func() bool, within time.Duration) bool {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if cond() {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return cond()
	}

	// The client posts turn 2 and gives up after 200 ms.
	reqCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	req, _ := http.NewRequestWithContext(reqCtx, "POST", srv.URL+"/v1/conversations/c/turns", strings.NewReader(`{`+qa+`}`))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	sent := time.Now()
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			err = errors.New("the request was answered: " + res.Status)
		}
		done <- err
	}()
	if !poll(func() bool { return waiting() == 1 }, 5*time.Second) {
		t.Fatalf("the turn write never waited on the conversation lock (backends waiting: %d)", waiting())
	}
	time.Sleep(time.Until(sent.Add(200 * time.Millisecond)))
	giveUp()
	gaveUp := time.Now()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}

	if !poll(func() bool { return waiting() == 0 }, 2*time.Second) {
		t.Fatalf("2 s after the client went away, the server's backend still waits on the lock")
	}
	t.Logf("the server's query stopped waiting %v after the client gave up", time.Since(gaveUp).Round(time.Millisecond))

	// Nothing of the abandoned turn was written: the next one is turn 2.
	if err := lockTx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r, tr := e.turn("c", `{`+qa+`}`); r.status != 201 || tr.Turn != 2 {
		t.Errorf("the turn after the abandoned one: %d turn %d, want 201 turn 2: %s", r.status, tr.Turn, r.body)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"status":5`) {
			t.Errorf("the server logged a failure for a client that went away: %s", line)
		}
	}
}
