package explorer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// The explorer in a real headless Chromium (Debian's chromium package; scripts/test.sh
// installs it through scripts/install-test-tools.sh), driven over the DevTools protocol with
// chromedp, against a server seeded through the API on both stores. Each case asserts what a
// person sees: texts, counts and states. Every view is saved as a screenshot at 1280×800 and
// at 390 px wide under tmp/explorer-screenshots/ at the repository root (gitignored).

// chromiumPath is the browser to drive: FOOTPRINT_CHROMIUM, else chromium on PATH.
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("FOOTPRINT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FOOTPRINT_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH; scripts/install-test-tools.sh installs Debian's chromium package")
	}
	t.Skip("no chromium on PATH (scripts/install-test-tools.sh installs it); set FOOTPRINT_REQUIRE_BROWSER=1 to fail instead")
	return ""
}

// shotDir is where screenshots go.
func shotDir(t *testing.T) string {
	dir := os.Getenv("FOOTPRINT_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "tmp", "explorer-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// page is one browser tab on one server, and what its console said.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	name string // the store's, for screenshot names

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func openBrowser(t *testing.T, base, name string) *page {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	p := &page{t: t, ctx: ctx, base: base, name: name}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.console = append(p.console, m)
			p.mu.Unlock()
		}
	}()
	return p
}

// do runs steps, failing the test with what the page shows when one fails.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		main, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.querySelector("main") ? document.querySelector("main").innerText.slice(0, 1500) : ""`))
		p.t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, main)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is truthy.
func (p *page) waitFor(what, expr string) {
	p.t.Helper()
	p.do("wait for "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second)))
}

// waitText waits until the element matching sel contains text.
func (p *page) waitText(sel, text string) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("%q in %s", text, sel), fmt.Sprintf(`[...document.querySelectorAll(%q)].some(e => e.innerText.includes(%q))`, sel, text))
}

// visit opens a view, as following a link does, and waits until it shows its heading.
func (p *page) visit(route, heading string) {
	p.t.Helper()
	p.do("open "+route, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		document.querySelector("main").replaceChildren();
		if (location.hash === %[1]q) window.dispatchEvent(new HashChangeEvent("hashchange"));
		else location.hash = %[1]q;
	})()`, route)))
	p.waitText("main h1", heading)
}

// shot saves the view as a screenshot at 1280×800 and at 390 px wide, and checks that at 390 px
// nothing but a table's own scroller is wider than the screen.
func (p *page) shot(view string) {
	p.t.Helper()
	dir := shotDir(p.t)
	save := func(suffix string) {
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			p.t.Fatalf("screenshot %s: %v", view, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", view, p.name, suffix)), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
	save("1280")
	p.do("narrow viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1)), chromedp.Sleep(150*time.Millisecond))
	if w := eval[int](p, `document.documentElement.scrollWidth`); w > 392 {
		wide := eval[string](p, `[...document.querySelectorAll("body *")].filter(e => (e.getBoundingClientRect().right > 392 || e.scrollWidth > 392) && !e.closest(".table-wrap, .events .spacer")).slice(0, 8).map(e => e.tagName + "." + e.className + ":" + e.scrollWidth + "/" + Math.round(e.getBoundingClientRect().right)).join(", ")`)
		p.t.Errorf("%s at 390 px is %d px wide: %s", view, w, wide)
	}
	save("390")
	p.do("wide viewport", chromedp.EmulateViewport(1280, 800), chromedp.Sleep(100*time.Millisecond))
}

// consoleErrors are the messages a person would see as errors in the console: exceptions,
// console.error and console.warn calls, and browser log entries such as CSP violations. The
// browser's own "Failed to load resource" lines for the 4xx answers the explorer asks for on
// purpose (a dry run that refuses, a wrong key) are network entries, not the page's errors.
func (p *page) consoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.console {
		if m.Source == "network" {
			continue
		}
		if m.IsException() || m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning {
			out = append(out, m.String()+" at "+m.URL)
		}
	}
	return out
}

// client opens a connection per request: the live-run case drops the server's connections
// on purpose, and a kept-alive one would go with them.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}

// api is a client of the server under test.
type api struct {
	t    *testing.T
	base string
	key  string
}

func (a *api) call(method, path string, body any) (int, http.Header, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
		if strings.Contains(b, "}\n{") {
			ctype = "application/x-ndjson"
		}
	default:
		js, _ := json.Marshal(b)
		rd = bytes.NewReader(js)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	res, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, res.Header, m
}

func (a *api) must(method, path string, body any) map[string]any {
	a.t.Helper()
	status, _, m := a.call(method, path, body)
	if status >= 300 {
		a.t.Fatalf("%s %s: %d %v", method, path, status, m)
	}
	return m
}

// The stored content that must be shown inert, as the characters it is.
const (
	xssScript = `<script>window.__xss = "script"</script>`
	xssImg    = `<img src=x onerror="window.__xss = 'img'">`
	xssClose  = `</span></p></main><b id="xss-bold">bold</b>`
)

// seed tells the README's story through the API: memories, three turns (turn 2 with the XSS
// probe and no evidence), a recall for turn 3, its recorded run, the turn linked to both; a
// conversation of another principal; a finished run of 12,000 events with a truncated payload
// and repeated announcements; and an open run for live following.
func seed(t *testing.T, a *api) (recallID string) {
	t.Helper()
	a.must("POST", "/v1/memories", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window", "size": 20}})
	a.must("POST", "/v1/memories", map[string]any{"id": "why", "type": "causal", "strategy": map[string]any{"kind": "topK", "topK": 2, "threshold": 0.2}})
	a.must("POST", "/v1/memories", map[string]any{"id": "facts", "type": "semantic", "strategy": map[string]any{"kind": "extract"}})
	a.must("POST", "/v1/conversations/support-4821/turns", `{"messages":[
		{"role":"user","content":"What is the refund window for damaged items?"},
		{"role":"assistant","content":"Damaged items are refunded within 30 days."}],
		"evidence":{"iterations":1,"decisions":[{"stageId":"policy","chosen":"30-day window","rule":"old handbook"}],
		"toolCalls":[{"name":"lookup_policy","args":{"topic":"refunds"},"resultPreview":"30 days (handbook 2019)","errored":false}],
		"durationMs":840,"tokenUsage":{"input":512,"output":64}}}`)
	probe, _ := json.Marshal("Yes, we ship to Norway. " + xssScript + " " + xssImg + " " + xssClose)
	a.must("POST", "/v1/conversations/support-4821/turns", `{"messages":[
		{"role":"user","content":"My name is Ada and I live in Oslo. Do you ship to Norway?"},
		{"role":"assistant","content":`+string(probe)+`}]}`)
	rc := a.must("POST", "/v1/conversations/support-4821/recall", map[string]any{"query": "How long do refunds for damaged items take?", "turn": 3, "runId": "run-3"})
	recallID = rc["recallId"].(string)
	a.must("POST", "/v1/runs", map[string]any{"runId": "run-3", "conversationId": "support-4821", "turn": 3})
	var events []any
	for _, inj := range rc["injections"].([]any) {
		events = append(events, map[string]any{"type": "context.injected", "payload": map[string]any{"slot": "system", "source": "memory", "sourceId": inj.(map[string]any)["id"], "iteration": 1}})
	}
	events = append(events, map[string]any{"type": "llm.request", "payload": map[string]any{"model": "gpt-4o-mini", "iteration": 1}},
		map[string]any{"type": "llm.response", "payload": map[string]any{"iteration": 1, "tokens": 212}})
	a.must("POST", "/v1/runs/run-3/events", map[string]any{"events": events})
	a.must("POST", "/v1/runs/run-3/finish", map[string]any{"complete": true})
	a.must("POST", "/v1/conversations/support-4821/turns", map[string]any{"runId": "run-3", "recallIds": []string{recallID}, "messages": []any{
		map[string]any{"role": "user", "content": "How long do refunds for damaged items take?"},
		map[string]any{"role": "assistant", "content": "We refund damaged items within 30 days."}}})
	a.must("POST", "/v1/conversations/thread-7/turns?principal=user-42", `{"messages":[{"role":"user","content":"Hello there"},{"role":"assistant","content":"Hi!"}]}`)

	// A long run: 12,000 events against a cap of 10,000 (2,000 dropped), a truncated payload,
	// and runs of repeated announcements.
	a.must("POST", "/v1/runs", map[string]any{"runId": "long-run", "maxEvents": 10000})
	big := strings.Repeat("x", 70*1024)
	for b := range 12 {
		batch := make([]any, 0, 1000)
		for i := range 1000 {
			n := b*1000 + i
			var ev map[string]any
			switch {
			case n == 11500:
				ev = map[string]any{"type": "tool.result", "payload": map[string]any{"blob": big}}
			case n%100 >= 97: // three identical announcements: one held, two repeats
				ev = map[string]any{"type": "context.injected", "payload": map[string]any{"slot": "system", "sourceId": fmt.Sprintf("memory:chat#msg-%d-0", n/100)}}
			default:
				ev = map[string]any{"type": "step", "payload": map[string]any{"n": n}}
			}
			batch = append(batch, ev)
		}
		a.must("POST", "/v1/runs/long-run/events", map[string]any{"events": batch})
	}
	a.must("POST", "/v1/runs/long-run/finish", map[string]any{"complete": true})
	a.must("POST", "/v1/runs", map[string]any{"runId": "live-run", "conversationId": "support-4821", "turn": 4})
	return recallID
}

func newServer(t *testing.T, store app.Store, keys []server.APIKey) *httptest.Server {
	t.Helper()
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	caps := core.Capabilities{Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true, Description: "lexical"}}}
	h, err := server.NewServer(server.Deps{App: app.New(store, caps, app.WithEmbedders(hash)), APIKeys: keys, MaxBodyBytes: 4 << 20,
		CursorSecret: []byte("explorer-test-secret")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// TestExplorer drives every view on both stores.
func TestExplorer(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	for _, s := range []struct {
		name string
		open func(t *testing.T) app.Store
	}{
		{"memory", func(*testing.T) app.Store { return memory.New() }},
		{"postgres", func(t *testing.T) app.Store { return pgtest.Open(t) }},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, s.open(t), nil)
			a := &api{t: t, base: srv.URL}
			recallID := seed(t, a)
			p := openBrowser(t, srv.URL, s.name)

			t.Run("Root", func(t *testing.T) { p.t, a.t = t, t; rootRedirects(p) })
			t.Run("Strategies", func(t *testing.T) { p.t, a.t = t, t; strategies(p, a) })
			t.Run("Memories", func(t *testing.T) { p.t, a.t = t, t; memories(p) })
			t.Run("Conversations", func(t *testing.T) { p.t, a.t = t, t; conversations(p) })
			t.Run("Timeline", func(t *testing.T) { p.t, a.t = t, t; timeline(p) })
			t.Run("Recall", func(t *testing.T) { p.t, a.t = t, t; recallEvidence(p, a, recallID) })
			t.Run("RunTail", func(t *testing.T) { p.t, a.t = t, t; runTail(p, a) })
			t.Run("LiveRun", func(t *testing.T) { p.t, a.t = t, t; liveRun(p, a, srv) })
			t.Run("Explain", func(t *testing.T) { p.t, a.t = t, t; explainWalk(p) })
			t.Run("Usage", func(t *testing.T) { p.t, a.t = t, t; usage(p) })
			p.t, a.t = t, t
			if errs := p.consoleErrors(); len(errs) > 0 {
				t.Errorf("the console shows errors:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
}

func rootRedirects(p *page) {
	p.do("open /", chromedp.Navigate(p.base+"/"))
	p.waitText("main h1", "Conversations")
	if u := eval[string](p, `location.pathname`); u != "/explorer/" {
		p.t.Errorf("/ led to %s, want /explorer/", u)
	}
	// Keyboard: on a fresh page the first Tab reaches the skip link, the next ones the navigation.
	p.do("tab", chromedp.KeyEvent("\t"))
	if got := eval[string](p, `document.activeElement.textContent`); got != "Skip to content" {
		p.t.Errorf("first Tab focuses %q, want the skip link", got)
	}
	p.do("tab", chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
	if got := eval[string](p, `document.activeElement.textContent`); got != "Strategies" {
		p.t.Errorf("third Tab focuses %q, want the Strategies link", got)
	}
	p.do("enter", chromedp.KeyEvent("\r"))
	p.waitText("main h1", "Strategies")
}

// unlabelled lists the form fields on the page that have no label.
func unlabelled(p *page) string {
	return eval[string](p, `[...document.querySelectorAll("main input, main select, main textarea")]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label")).map(e => e.id || e.name || e.tagName).join(", ")`)
}

func strategies(p *page, a *api) {
	p.visit("#/strategies", "Strategies")
	if n := eval[int](p, `document.querySelectorAll(".cards .card").length`); n != 7 {
		p.t.Errorf("%d strategy cards, want 7", n)
	}
	p.waitText(`.card[data-kind="summarize"]`, "missing: llm")
	p.waitText(`.card[data-kind="topK"]`, "offerable")
	p.waitText(`.card[data-kind="window"]`, "episodic")
	p.do("choose window", chromedp.Click(chromedp.CSS(`.card[data-kind="window"] button`)))
	p.waitText("#memory-form h2", "A memory with window")
	if got := unlabelled(p); got != "" {
		p.t.Errorf("form fields without a label: %s", got)
	}
	// A size the server refuses: the refusal appears at the size field, with a fix.
	p.do("type", chromedp.SendKeys(chromedp.CSS("#f-id"), "notes"), chromedp.SendKeys(chromedp.CSS("#f-strategy-size"), "-3"))
	p.waitText(`.field[data-path="strategy.size"] .refusal`, "`strategy.size` must be a whole number from 1 to 10000; got -3.")
	if inv := eval[string](p, `document.querySelector("#f-strategy-size").getAttribute("aria-invalid")`); inv != "true" {
		p.t.Errorf("the refused field is not marked invalid: %q", inv)
	}
	p.shot("strategy-form-refusal")
	p.do("apply the fix", chromedp.Click(chromedp.CSS(`.field[data-path="strategy.size"] .refusal button`)))
	p.waitText("#memory-form .status", "Valid.")
	if v := eval[string](p, `document.querySelector("#f-strategy-size").value`); v != "20" {
		p.t.Errorf("after the fix the size is %q, want 20", v)
	}
	if n := eval[int](p, `document.querySelectorAll("#memory-form .refusal").length`); n != 0 {
		p.t.Errorf("%d refusals left after the fix", n)
	}
	p.do("create", chromedp.Click(chromedp.CSS(`#memory-form button[type=submit]`)))
	p.waitText("#memory-form .status", "Created notes")
	if _, _, m := a.call("GET", "/v1/memories/notes", nil); m["strategy"].(map[string]any)["size"] != 20.0 {
		p.t.Errorf("the memory created = %v", m)
	}
	p.shot("strategies")

	// A hybrid part the type does not accept: the refusal names the part, and the fix replaces
	// that part only.
	p.do("choose hybrid", chromedp.Click(chromedp.CSS(`.card[data-kind="hybrid"] button`)))
	p.waitText("#memory-form h2", "A memory with hybrid")
	p.do("type", chromedp.SendKeys(chromedp.CSS("#f-id"), "mixed"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#f-strategy-strategies").value = ""`),
		chromedp.SendKeys(chromedp.CSS("#f-strategy-strategies"), `[{"kind":"window","size":5},{"kind":"topK"}]`))
	p.waitText(`.field[data-path="strategy.strategies"] .refusal`, "strategy.strategies[1].kind")
	p.do("apply the fix", chromedp.Click(chromedp.CSS(`.field[data-path="strategy.strategies"] .refusal button`)))
	p.waitText("#memory-form .status", "Valid.")
	if v := eval[string](p, `JSON.stringify(JSON.parse(document.querySelector("#f-strategy-strategies").value))`); v != `[{"kind":"window","size":5},{"kind":"window","size":20}]` {
		p.t.Errorf("after the fix the parts are %s", v)
	}
}

func memories(p *page) {
	p.visit("#/memories", "Memories")
	for _, id := range []string{"chat", "why", "facts", "notes"} {
		p.waitText("main table tbody", id)
	}
	if n := eval[int](p, `document.querySelectorAll("main tbody tr").length`); n != 4 {
		p.t.Errorf("%d memories listed, want 4", n)
	}
	p.waitText("main tbody", `{"topK":2,"threshold":0.2,"rejectWindow":10}`)
	p.shot("memories")
}

func conversations(p *page) {
	p.visit("#/conversations", "Conversations")
	p.waitText("main [role=status]", "2 conversations.")
	row := eval[string](p, `[...document.querySelectorAll("main tbody tr")].find(r => r.innerText.includes("support-4821")).innerText`)
	for _, want := range []string{"support-4821", "none", "3", "11", "chat: 6", "facts: 2", "why: 3"} {
		if !strings.Contains(row, want) {
			p.t.Errorf("support-4821's row %q lacks %q", row, want)
		}
	}
	p.shot("conversations")
	p.do("filter", chromedp.SendKeys(chromedp.CSS("#filter-principal"), "user-42"), chromedp.Click(chromedp.CSS("main form button")))
	p.waitText("main [role=status]", "1 conversation.")
	p.waitText("main tbody", "thread-7")
	if got := unlabelled(p); got != "" {
		p.t.Errorf("filter fields without a label: %s", got)
	}
}

func timeline(p *page) {
	p.visit("#/conversations/support-4821", "Conversation support-4821")
	p.waitFor("four turns", `document.querySelectorAll("article.turn").length === 4`)
	p.waitText("#turn-4", "under way: nothing posted yet")
	p.waitText("#turn-4", "live-run")
	p.waitText("#turn-1", "840 ms")
	p.waitText("#turn-1", "512 in, 64 out")
	p.waitText("#turn-2", "No evidence was reported with this turn")
	p.waitText("#turn-3", "run-3")
	p.waitText("#turn-3", "Recalls: rcl_")
	p.waitText("#turn-3", "why#snap-3")
	// The XSS probe: shown as the characters it is, and nothing ran or was made of it.
	text := eval[string](p, `document.querySelector("#turn-2").innerText`)
	for _, want := range []string{xssScript, xssImg, xssClose} {
		if !strings.Contains(text, want) {
			p.t.Errorf("turn 2 does not show %q as text; it shows:\n%s", want, text)
		}
	}
	if got := eval[string](p, `String(window.__xss)`); got != "undefined" {
		p.t.Errorf("stored content ran: window.__xss = %s", got)
	}
	if n := eval[int](p, `document.querySelectorAll("main img, main script, #xss-bold").length`); n != 0 {
		p.t.Errorf("stored content became %d elements", n)
	}
	p.shot("timeline")
}

func recallEvidence(p *page, a *api, recallID string) {
	p.visit("#/recalls/"+recallID+"?conversation=support-4821", "Recall "+recallID)
	p.waitText("main", "Memory why")
	why := `[...document.querySelectorAll("main section.card")].find(s => s.querySelector("h2").innerText.startsWith("Memory why"))`
	p.waitFor("why's candidates", why+`.querySelectorAll("tbody tr").length === 2`)
	if got := eval[string](p, why+`.innerText`); !strings.Contains(got, "exact") || !strings.Contains(got, "hash (384 dims)") ||
		!strings.Contains(got, "0.200") || !strings.Contains(got, "below-threshold") || !strings.Contains(got, "Nearest miss") {
		p.t.Errorf("why's evidence lacks search mode, embedder, threshold or a rejection:\n%s", got)
	}
	if n := eval[int](p, why+`.querySelectorAll(".scorebar .threshold").length`); n != 2 {
		p.t.Errorf("%d threshold lines on why's 2 bars", n)
	}
	// Every admitted fragment is marked in the prompt and links to its candidate.
	marks := eval[int](p, `document.querySelectorAll(".prompt mark").length`)
	admitted := eval[int](p, `[...document.querySelectorAll("main tbody tr")].filter(r => r.innerText.includes("admitted")).length`)
	if marks != 7 || admitted != 7 {
		p.t.Errorf("%d fragments marked, %d candidates admitted; want 7 of each", marks, admitted)
	}
	// Each mark is the text its candidate's systemSpan names: UTF-8 byte offsets, sliced as
	// bytes (the snapshot's tool call holds a "→", three bytes and one UTF-16 unit).
	receipt := a.must("GET", "/v1/recalls/"+recallID, nil)
	prompt := receipt["systemPrompt"].(string)
	want := map[string]string{}
	for _, m := range receipt["memories"].([]any) {
		m := m.(map[string]any)
		ev := m["evidence"].(map[string]any)
		for _, c := range ev["candidates"].([]any) {
			c := c.(map[string]any)
			if sp, ok := c["systemSpan"].(map[string]any); ok {
				want[m["memoryId"].(string)+"#"+c["id"].(string)] = prompt[int(sp["startByte"].(float64)):int(sp["endByte"].(float64))]
			}
		}
	}
	if !strings.Contains(prompt, "→") {
		p.t.Errorf("the recall's prompt holds no multi-byte character to test the spans with:\n%s", prompt)
	}
	got := eval[map[string]string](p, `Object.fromEntries([...document.querySelectorAll(".prompt mark")].map(m => [m.title, m.textContent]))`)
	if len(got) != len(want) {
		p.t.Errorf("%d marks, %d spans", len(got), len(want))
	}
	for id, text := range want {
		if got[id] != text {
			p.t.Errorf("mark %s shows %q, its span names %q", id, got[id], text)
		}
	}
	if full := eval[string](p, `document.querySelector(".prompt").textContent`); full != prompt {
		p.t.Errorf("the prompt shown is not systemPrompt:\n%q\n%q", full, prompt)
	}
	p.do("follow a fragment", chromedp.Click(chromedp.CSS(`.prompt mark[title="why#snap-1"] a`)))
	if got := eval[string](p, `document.querySelector("tr.target") ? document.querySelector("tr.target").id : ""`); got != "cand-why-snap-1" {
		p.t.Errorf("the fragment led to %q, want why's snap-1 candidate", got)
	}
	p.shot("recall")
}

func runTail(p *page, a *api) {
	rec := a.must("GET", "/v1/runs/long-run", nil)["run"].(map[string]any)
	held, dropped, first := int(rec["eventCount"].(float64)), int(rec["droppedEvents"].(float64)), int(rec["firstRetainedEventIndex"].(float64))
	if dropped == 0 || held < 10000 {
		p.t.Fatalf("the long run holds %d events, %d dropped: the seed did not exceed the cap", held, dropped)
	}
	p.visit("#/runs/long-run", "Run long-run")
	p.waitText("main .tail-summary", fmt.Sprintf("%d events held", held))
	summary := eval[string](p, `document.querySelector(".tail-summary").innerText`)
	for _, want := range []string{fmt.Sprintf("%d dropped", dropped), fmt.Sprintf("tail starts at event #%d", first), "1 truncated payloads"} {
		if !strings.Contains(summary, want) {
			p.t.Errorf("the tail's summary %q lacks %q", summary, want)
		}
	}
	p.waitText(".events", fmt.Sprintf("events #0–#%d were dropped", first-1))
	// 10,000 events, but only the rows in view are in the page.
	if n := eval[int](p, `document.querySelectorAll(".events .row").length`); n < 10 || n > 80 {
		p.t.Errorf("%d rows in the page for 10,000 events: not virtualised", n)
	}
	p.waitText(".events", "×3 repeats folded")
	p.do("scroll to the end", chromedp.Evaluate[chromedp.Void](`document.querySelector(".events").scrollTop = 1e9`))
	p.waitText(".events", "#11997") // with its two repeats folded in
	// Scroll down screen by screen, as a person would, from the last tenth of the tail (where
	// the seed put it) until the truncated payload is in view.
	p.do("scroll", chromedp.Evaluate[chromedp.Void](`document.querySelector(".events").scrollTop = document.querySelector(".events").scrollHeight * 0.9`))
	p.waitFor("the truncated row", `(() => {
		const s = document.querySelector(".events");
		if ([...s.querySelectorAll(".row")].some(r => r.innerText.includes("truncated ("))) return true;
		s.scrollTop = s.scrollTop + s.clientHeight >= s.scrollHeight ? 0 : s.scrollTop + s.clientHeight;
		return false;
	})()`)
	p.do("open it", chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll(".events .row")].find(r => r.innerText.includes("truncated (")).click()`))
	p.waitText("main .card", "Truncated: the payload was")
	p.shot("run-tail")
}

func liveRun(p *page, a *api, srv *httptest.Server) {
	p.visit("#/runs/live-run", "Run live-run")
	p.waitText("main .live", "Following live")
	a.must("POST", "/v1/runs/live-run/events", "{\"type\":\"llm.request\",\"payload\":{\"iteration\":1}}\n{\"type\":\"tool.call\",\"payload\":{\"name\":\"lookup\"}}\n")
	p.waitText(".events", "tool.call")
	p.waitText("main .tail-summary", "2 events held")
	// The connection drops: the page reconnects and resumes after the last event it saw.
	srv.CloseClientConnections()
	a.must("POST", "/v1/runs/live-run/events", map[string]any{"events": []any{map[string]any{"type": "llm.response", "payload": map[string]any{"text": "resumed"}}}})
	p.waitText(".events", "llm.response")
	p.waitText("main .tail-summary", "3 events held")
	p.waitText("main .live", "Following live")
	if n := eval[int](p, `[...document.querySelectorAll(".events .row")].filter(r => r.innerText.includes("#1")).length`); n != 1 {
		p.t.Errorf("event #1 shown %d times after the resume", n)
	}
	p.shot("run-live")
	a.must("POST", "/v1/runs/live-run/finish", map[string]any{"complete": true})
	p.waitText("main .live", "Finished")
}

func explainWalk(p *page) {
	p.visit("#/conversations/support-4821/turns/3/explain", "Explain turn 3 of support-4821")
	p.waitText("main", "What the model was shown, call by call")
	p.waitText("main table", "memory:why#snap-1")
	p.waitText("main", "Earlier: turn 1, which wrote an origin")
	// run-3 showed the model every piece recall offered.
	p.waitText("main", "shown in model call 1 of run-3")
	// Honesty flags of the earlier turn (no recording, no recall linked) are stated.
	p.waitText("main .flags", "no-recording")
	p.waitText("main", "Suspects")
	suspect := `[...document.querySelectorAll("main table tbody tr")].find(r => r.querySelector("th") && r.querySelector("th").innerText === "memory:why#snap-1" && r.querySelector("button"))`
	p.waitFor("the snap-1 suspect", suspect)
	p.do("open the rerun form", chromedp.Evaluate[chromedp.Void](suspect+`.querySelector("button").click()`))
	p.waitFor("the form", `document.querySelector("#abl-answer") !== null`)
	if got := unlabelled(p); got != "" {
		p.t.Errorf("ablation fields without a label: %s", got)
	}
	p.do("fill it", chromedp.SendKeys(chromedp.CSS("#abl-answer"), "Damaged items are refunded within 14 days."), chromedp.Click(chromedp.CSS("#abl-flipped")),
		chromedp.Click(chromedp.CSS(`#ablation-form-inner button[type=submit]`)))
	p.waitText("main", "Damaged items are refunded within 14 days.")
	p.waitFor("the suspect's rerun", suspect+`.innerText.includes("1 (1 flipped)")`)
	p.shot("explain")
}

func usage(p *page) {
	p.visit("#/conversations/support-4821/entries/why/snap-1", "Entry why#snap-1")
	p.waitText("main", "Offered to turns 3.")
	p.waitFor("one receipt", `document.querySelectorAll("main tbody tr").length === 1`)
	p.shot("usage")
}

// TestExplorerWithKeys: a deployment with keys asks for one; a wrong key shows the 401
// problem's words; the right one is kept for the tab and sent as the bearer token.
func TestExplorerWithKeys(t *testing.T) {
	t.Parallel()
	chromiumPath(t)
	srv := newServer(t, memory.New(), []server.APIKey{{Tenant: "acme", Key: "acme-key-0123456789abcdef"}})
	a := &api{t: t, base: srv.URL, key: "acme-key-0123456789abcdef"}
	a.must("POST", "/v1/memories", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window"}})
	a.must("POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"hello"}]}`)
	_, _, unauthorized := (&api{t: t, base: srv.URL, key: "wrong-key"}).call("GET", "/v1/conversations", nil)
	p := openBrowser(t, srv.URL, "keys")
	p.do("open", chromedp.Navigate(srv.URL+"/explorer/#/conversations"))
	p.waitText("main h1", "API key")
	p.do("wrong key", chromedp.SendKeys(chromedp.CSS("#api-key"), "wrong-key"), chromedp.Click(chromedp.CSS("main form button[type=submit]")))
	p.waitText("main .problem", unauthorized["detail"].(string))
	p.shot("api-key")
	p.do("right key", chromedp.SendKeys(chromedp.CSS("#api-key"), a.key), chromedp.Click(chromedp.CSS("main form button[type=submit]")))
	p.waitText("main [role=status]", "1 conversation.")
	if got := eval[string](p, `sessionStorage.getItem("footprint.apiKey")`); got != a.key {
		p.t.Errorf("sessionStorage holds %q", got)
	}
	p.waitText("#auth", "API key set")
	if errs := p.consoleErrors(); len(errs) > 0 {
		t.Errorf("the console shows errors:\n%s", strings.Join(errs, "\n"))
	}
}
