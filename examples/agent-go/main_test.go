package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestAgentLoop runs the example against the real server on both stores, with an API key, and
// checks that its explanation walks the last answer back to turn 1's decision.
func TestAgentLoop(t *testing.T) {
	for name, open := range map[string]func(*testing.T) app.Store{
		"memory":   func(*testing.T) app.Store { return memory.New() },
		"postgres": func(t *testing.T) app.Store { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			hash, err := embedder.NewHash("hash", 384)
			if err != nil {
				t.Fatal(err)
			}
			caps := core.Capabilities{Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true}}}
			const key = "agent-key-0123456789abcdef"
			h, err := server.NewServer(server.Deps{App: app.New(open(t), caps, app.WithEmbedders(hash)), APIKeys: []server.APIKey{{Tenant: "t", Key: key}}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, &out, srv.URL, key, "support-1"); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			for _, want := range []string{
				"memory chat: defined", "memory why: defined",
				`turn 3: "How long do refunds for damaged items take?" -> "We refund damaged items within 30 days."`,
				"explain turn 3: top suspect memory:why#snap-1",
				`origin: entry snap-1 of memory why, written by turn 1: "Damaged items are refunded within 30 days."`,
				"turn 1 decided policy: 30-day window (rule: old handbook)",
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the agent's output lacks %q:\n%s", want, out.String())
				}
			}
			t.Logf("the agent's output:\n%s", out.String())
			// Run again on the same tenant: the memories exist, a new conversation goes through.
			out.Reset()
			if err := run(ctx, &out, srv.URL, key, "support-2"); err != nil || !strings.Contains(out.String(), "memory chat: already defined") {
				t.Errorf("a second run: %v\n%s", err, out.String())
			}
		})
	}
}
