package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/client"
	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

const key = "acme-key-0123456789abcdef"

// serve starts the real server handler over store, with one tenant's key, behind front (nil:
// none), and returns its URL.
func serve(t *testing.T, store app.Store, rate float64, front func(real http.Handler) http.Handler) string {
	t.Helper()
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	caps := core.Capabilities{Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true}}}
	h, err := server.NewServer(server.Deps{
		App:       app.New(store, caps, app.WithEmbedders(hash)),
		APIKeys:   []server.APIKey{{Tenant: "acme", Key: key}},
		RateLimit: rate, RateBurst: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if front != nil {
		h = front(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func stores(t *testing.T, f func(t *testing.T, s app.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, memory.New()) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Open(t)) })
}

func msgs(q, a string) []client.Message {
	return []client.Message{{Role: client.MessageRoleUser, Content: q}, {Role: client.MessageRoleAssistant, Content: a}}
}

// TestClient drives the generated client, through the thin layer, against the real server on
// both stores: the key, typed answers, and problems as *client.Error.
func TestClient(t *testing.T) {
	stores(t, func(t *testing.T, store app.Store) {
		ctx := context.Background()
		url := serve(t, store, 0, nil)
		fp, err := client.New(url, client.Config{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		m, err := fp.CreateMemoryWithResponse(ctx, nil, client.MemoryInput{ID: "chat", Type: client.MemoryTypeEpisodic,
			Strategy: map[string]any{"kind": "window", "size": 20}})
		if err != nil || m.JSON201 == nil || m.JSON201.Version != 1 {
			t.Fatalf("create memory: %v %+v", err, m)
		}
		// A teaching refusal is an *Error with the problem's code, path and fix.
		_, err = fp.CreateMemoryWithResponse(ctx, nil, client.MemoryInput{ID: "notes", Type: client.MemoryTypeEpisodic, Strategy: "window"})
		var pe *client.Error
		if !errors.As(err, &pe) || pe.Status != 422 || pe.Code != "invalid-strategy" || pe.Path != "strategy" || pe.Fix == nil || pe.RequestID == "" {
			t.Fatalf("a bare strategy name: %v (%+v)", err, pe)
		}
		if fix, _ := pe.Fix.(map[string]any); fix["kind"] != "window" {
			t.Errorf("the fix = %v", pe.Fix)
		}
		turn, err := fp.PostTurnWithResponse(ctx, "c1", nil, client.TurnInput{Messages: msgs("What is the refund window?", "30 days.")})
		if err != nil || turn.JSON201 == nil || turn.JSON201.Turn == nil || *turn.JSON201.Turn != 1 {
			t.Fatalf("post turn: %v %+v", err, turn)
		}
		rec, err := fp.RecallWithResponse(ctx, "c1", nil, client.RecallInput{Query: client.Ptr("refund window"), Turn: client.Ptr(2)})
		if err != nil || rec.JSON200 == nil || rec.JSON200.RecallID == "" || rec.JSON200.SystemPrompt == "" {
			t.Fatalf("recall: %v %+v", err, rec)
		}
		// The injections' texts, joined as the memories join, are the system prompt.
		var pieces []string
		for _, inj := range rec.JSON200.Injections {
			text, ok := rec.JSON200.InjectionText(inj)
			if !ok || text == "" {
				t.Errorf("injection %s has no text: %+v", inj.ID, inj.Inject)
			}
			pieces = append(pieces, text)
		}
		if got := strings.Join(pieces, "\n\n"); got != rec.JSON200.SystemPrompt || !strings.Contains(got, "30 days.") {
			t.Errorf("the injections' texts make\n%q\nnot the system prompt\n%q", got, rec.JSON200.SystemPrompt)
		}
		if _, ok := rec.JSON200.SpanText(&client.PromptSpan{StartByte: 0, EndByte: len(rec.JSON200.SystemPrompt) + 1}); ok {
			t.Error("a span past the end of the prompt has a text")
		}
		// Without the key: 401 unauthorized, as an *Error.
		anon, _ := client.New(url, client.Config{})
		if _, err := anon.ListMemoriesWithResponse(ctx, nil); !errors.As(err, &pe) || pe.Status != 401 || pe.Code != "unauthorized" {
			t.Errorf("without a key: %v", err)
		}
		// A problem with extra members keeps them.
		_, err = fp.CreateMemoryWithResponse(ctx, nil, client.MemoryInput{ID: "notes", Type: client.MemoryTypeEpisodic, Strategy: map[string]any{"kind": "nope"}})
		if !errors.As(err, &pe) || pe.Code != "unknown-strategy" || pe.Problem.AdditionalProperties["kinds"] == nil {
			t.Errorf("an unknown kind: %v %+v", err, pe)
		}
	})
}

// TestTurnRetryKeepsItsIdempotencyKey: a turn whose answer is lost (the server stored it, the
// client got a 503) is retried with the same Idempotency-Key, so the server replays the turn
// instead of storing it twice.
func TestTurnRetryKeepsItsIdempotencyKey(t *testing.T) {
	stores(t, func(t *testing.T, store app.Store) {
		ctx := context.Background()
		var mu sync.Mutex
		var keys []string
		lost := false
		url := serve(t, store, 0, func(real http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/conversations/c1/turns" {
					mu.Lock()
					keys = append(keys, r.Header.Get("Idempotency-Key"))
					first := !lost
					lost = true
					mu.Unlock()
					if first {
						real.ServeHTTP(httptest.NewRecorder(), r) // stored; the answer never arrives
						w.Header().Set("Retry-After", "0")
						w.Header().Set("Content-Type", "application/problem+json")
						w.WriteHeader(http.StatusServiceUnavailable)
						_, _ = w.Write([]byte(`{"type":"/problems/unavailable","title":"Service unavailable","status":503,"code":"unavailable"}`))
						return
					}
				}
				real.ServeHTTP(w, r)
			})
		})
		fp, _ := client.New(url, client.Config{Key: key})
		if _, err := fp.CreateMemoryWithResponse(ctx, nil, client.MemoryInput{ID: "chat", Type: client.MemoryTypeEpisodic,
			Strategy: map[string]any{"kind": "window", "size": 20}}); err != nil {
			t.Fatal(err)
		}
		turn, err := fp.PostTurnWithResponse(ctx, "c1", nil, client.TurnInput{Messages: msgs("hello", "hi")})
		if err != nil || turn.JSON201 == nil || *turn.JSON201.Turn != 1 {
			t.Fatalf("post turn: %v %+v", err, turn)
		}
		if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
			t.Fatalf("Idempotency-Keys sent: %q, want one key twice", keys)
		}
		if turn.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("the retry was not a replay: %v", turn.HTTPResponse.Header)
		}
		entries, err := fp.ListEntriesWithResponse(ctx, "c1", nil)
		if err != nil || len(entries.JSON200.Entries) != 2 {
			t.Errorf("entries after the retried turn: %v %+v (want the turn's 2 messages once)", err, entries)
		}
		// A new turn gets a new key.
		if _, err := fp.PostTurnWithResponse(ctx, "c1", nil, client.TurnInput{Messages: msgs("again", "yes")}); err != nil || len(keys) != 3 || keys[2] == keys[0] {
			t.Errorf("the next turn: %v, keys %q", err, keys)
		}
	})
}

// TestRateLimitedRetries: a 429 is retried after its Retry-After; one that asks for longer than
// MaxRetryWait is returned at once, saying how long to wait.
func TestRateLimitedRetries(t *testing.T) {
	ctx := context.Background()
	url := serve(t, memory.New(), 1, nil) // one request a second, a burst of one
	fp, _ := client.New(url, client.Config{Key: key})
	impatient, _ := client.New(url, client.Config{Key: key, MaxRetryWait: time.Millisecond})
	if _, err := fp.ListMemoriesWithResponse(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var pe *client.Error
	if _, err := impatient.ListMemoriesWithResponse(ctx, nil); !errors.As(err, &pe) || pe.Code != "rate-limited" || pe.RetryAfter < time.Second {
		t.Fatalf("past the limit, unwilling to wait: %v %+v", err, pe)
	}
	// The bucket is empty: this one is refused first, waits out Retry-After and goes through.
	if res, err := fp.ListMemoriesWithResponse(ctx, nil); err != nil || res.JSON200 == nil {
		t.Fatalf("past the limit, willing to wait: %v", err)
	}
	never, _ := client.New(url, client.Config{Key: key, MaxRetries: -1})
	if _, err := never.ListMemoriesWithResponse(ctx, nil); !errors.As(err, &pe) || pe.Code != "rate-limited" {
		t.Errorf("with retries off: %v", err)
	}
}
