package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The principal-scoped memories of issue 24, through the API, on both stores.

const profileMemory = `{"id":"profile","type":"semantic","strategy":{"kind":"extract"},"scope":"principal"}`

// userSays posts a turn of conv for principal whose user message is text.
func (e *env) userSays(conv, principal, text string) turnResult {
	e.t.Helper()
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":"Noted."}]}`, text)
	r, tr := e.turnFor(conv, principal, body)
	if r.status != 201 {
		e.t.Fatalf("turn %s for %s: %d %s", conv, principal, r.status, r.body)
	}
	return tr
}

// turnFor posts a turn of conv for principal.
func (e *env) turnFor(conv, principal, body string) (response, turnResult) {
	e.t.Helper()
	r := e.do("POST", "/v1/conversations/"+conv+"/turns?principal="+principal, "", body)
	var tr turnResult
	if r.status < 300 {
		if err := json.Unmarshal(r.body, &tr); err != nil {
			e.t.Fatalf("turn result: %v %s", err, r.body)
		}
	}
	return r, tr
}

// recallOf returns the recall answer of conv for principal (nil principal: none).
func (e *env) recallOf(conv, principal, query string) map[string]any {
	e.t.Helper()
	path := "/v1/conversations/" + conv + "/recall"
	if principal != "" {
		path += "?principal=" + principal
	}
	r := e.do("POST", path, "", fmt.Sprintf(`{"query":%q}`, query))
	if r.status != 200 {
		e.t.Fatalf("recall %s: %d %s", path, r.status, r.body)
	}
	return r.json(e.t)
}

// memoryEvidence returns one memory's recall record from a recall answer.
func memoryEvidence(t *testing.T, answer map[string]any, memoryID string) map[string]any {
	t.Helper()
	for _, m := range answer["memories"].([]any) {
		if mm := m.(map[string]any); mm["memoryId"] == memoryID {
			return mm
		}
	}
	t.Fatalf("no recall of memory %q in %v", memoryID, answer)
	return nil
}

// memoryText returns one memory's recall text from a recall answer: the part of its
// systemPrompt the memory's systemSpan names ("" when it recalled nothing).
func memoryText(t *testing.T, answer map[string]any, memoryID string) string {
	t.Helper()
	span, ok := memoryEvidence(t, answer, memoryID)["systemSpan"].(map[string]any)
	if !ok {
		return ""
	}
	prompt := answer["systemPrompt"].(string)
	start, end := int(span["startByte"].(float64)), int(span["endByte"].(float64))
	if start < 0 || start > end || end > len(prompt) {
		t.Fatalf("memory %s: span %v outside the %d bytes of systemPrompt", memoryID, span, len(prompt))
	}
	return prompt[start:end]
}

func principalEntries(t *testing.T, e *env, principal string) []map[string]any {
	t.Helper()
	r := e.do("GET", "/v1/principals/"+principal+"/entries", "", "")
	if r.status != 200 {
		t.Fatalf("principal entries: %d %s", r.status, r.body)
	}
	var body struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Entries
}

// A fact stated in conversation A is recalled in conversation B of the same principal, and not
// for another principal; restated in B, it replaces A's and the entry shows both sources.
func TestPrincipalFactsFollowTheUser(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(profileMemory)
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		tr := e.userSays("march", "ada", "I live in Lisbon. Can you suggest a restaurant?")
		var ids []string
		for _, w := range tr.Written {
			if w.MemoryID == "profile" {
				ids = w.IDs
			}
		}
		if !slices.Contains(ids, "fact:location") {
			t.Fatalf("profile wrote %v, want fact:location (written %+v)", ids, tr.Written)
		}

		// A new conversation in May knows it.
		mayRecall := e.recallOf("may", "ada", "where do I live?")
		may := memoryEvidence(t, mayRecall, "profile")
		if text := memoryText(t, mayRecall, "profile"); !strings.Contains(text, "Lisbon") {
			t.Errorf("May's recall does not know where Ada lives: %q", text)
		}
		if may["scope"] != "principal" {
			t.Errorf("recall of profile: scope %v, want principal", may["scope"])
		}
		cands := may["evidence"].(map[string]any)["candidates"].([]any)
		if len(cands) != 1 || cands[0].(map[string]any)["conversationId"] != "march" || cands[0].(map[string]any)["turn"] != 1.0 {
			t.Errorf("the candidate does not name its source conversation and turn: %v", cands)
		}
		// Not for another principal, and not for a recall that names none.
		if other := memoryText(t, e.recallOf("may", "grace", "where do I live?"), "profile"); strings.Contains(other, "Lisbon") {
			t.Errorf("another principal recalled Ada's fact: %q", other)
		}
		anon := memoryEvidence(t, e.recallOf("may", "", "where do I live?"), "profile")
		if !strings.Contains(fmt.Sprint(anon["evidence"].(map[string]any)["note"]), "names no principal") {
			t.Errorf("a recall without a principal does not say why profile recalled nothing: %v", anon["evidence"])
		}

		// Restated in May: it replaces March's, and says what it replaced.
		e.userSays("may", "ada", "I live in Porto now.")
		entries := principalEntries(t, e, "ada")
		var loc map[string]any
		for _, en := range entries {
			if en["id"] == "fact:location" {
				loc = en
			}
		}
		if loc == nil {
			t.Fatalf("no fact:location among %v", entries)
		}
		if v := loc["value"].(map[string]any)["value"]; !strings.Contains(fmt.Sprint(v), "Porto") {
			t.Errorf("fact:location = %v, want the newest statement (Porto)", loc["value"])
		}
		sup, _ := loc["supersedes"].(map[string]any)
		if loc["conversationId"] != "may" || sup == nil || sup["conversationId"] != "march" ||
			!strings.Contains(fmt.Sprint(sup["value"]), "Lisbon") || loc["version"] != 2.0 {
			t.Errorf("restated fact = %v, want it from may, superseding march's Lisbon, version 2", loc)
		}
		// Another principal's list holds nothing of Ada's.
		if got := principalEntries(t, e, "grace"); len(got) != 0 {
			t.Errorf("grace's entries: %v", got)
		}
		// The conversation's own entries do not include the principal's.
		r := e.do("GET", "/v1/conversations/may/entries?principal=ada&memory=profile", "", "")
		if r.status != 200 || strings.Contains(string(r.body), "fact:location") {
			t.Errorf("a conversation's entries list the principal's: %d %s", r.status, r.body)
		}
	})
}

// Forgetting a conversation keeps the principal-scoped entries written from it, and says so;
// forgetting the principal erases everything of theirs and the counts add up.
func TestForgetPrincipal(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(profileMemory)
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.userSays("a", "ada", "My name is Ada. Where is my order?")
		e.userSays("a", "ada", "I live in Lisbon.")
		e.userSays("b", "ada", "My email is ada@example.com")
		e.userSays("c", "grace", "My name is Grace.")
		e.recallOf("b", "ada", "what is my email?")

		r := e.do("DELETE", "/v1/conversations/a?principal=ada", "", "")
		body := r.json(t)
		if r.status != 200 || body["erased"] != 4.0 || body["principalEntriesKept"] != 2.0 || !strings.Contains(fmt.Sprint(body["note"]), "/v1/principals/ada") {
			t.Errorf("forget conversation a: %d %v; want 4 erased (2 turns × 2 messages), 2 principal entries kept and a note", r.status, body)
		}
		if got := principalEntries(t, e, "ada"); len(got) != 3 {
			t.Errorf("after forgetting a conversation, ada's facts: %v; want all 3 (name, location, email)", got)
		}

		r = e.do("DELETE", "/v1/principals/ada", "", "")
		rep := r.json(t)
		want := map[string]any{"conversations": 1.0, "conversationEntries": 2.0, "principalEntries": 3.0, "recalls": 1.0, "runs": 0.0, "ablations": 0.0}
		for k, v := range want {
			if rep[k] != v {
				t.Errorf("forget principal: %s = %v, want %v (%v)", k, rep[k], v, rep)
			}
		}
		if got := principalEntries(t, e, "ada"); len(got) != 0 {
			t.Errorf("after forgetting ada: %v", got)
		}
		if r := e.do("GET", "/v1/conversations/b/entries?principal=ada", "", ""); !strings.Contains(string(r.body), `"entries":[]`) {
			t.Errorf("after forgetting ada, conversation b: %s", r.body)
		}
		// Grace is untouched.
		if got := principalEntries(t, e, "grace"); len(got) != 1 {
			t.Errorf("grace after ada was forgotten: %v", got)
		}
		if r := e.do("GET", "/v1/conversations/c/entries?principal=grace", "", ""); strings.Contains(string(r.body), `"entries":[]`) {
			t.Errorf("grace's conversation went with ada: %s", r.body)
		}
		// Forgetting again finds nothing.
		if r := e.do("DELETE", "/v1/principals/ada", "", ""); r.status != 200 || r.json(t)["principalEntries"] != 0.0 {
			t.Errorf("forget ada again: %d %s", r.status, r.body)
		}
	})
}

// Two conversations of one user state the same fact key at once: one statement wins, the other
// is what it superseded, and nothing is lost or duplicated.
func TestPrincipalConcurrentExtraction(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(profileMemory)
		const writers = 8
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"I live in City%d."},{"role":"assistant","content":"Noted."}]}`, i)
				if r, _ := e.turnFor(fmt.Sprintf("c%d", i), "ada", body); r.status != 201 {
					t.Errorf("writer %d: %d %s", i, r.status, r.body)
				}
			})
		}
		wg.Wait()
		entries := principalEntries(t, e, "ada")
		if len(entries) != 1 || entries[0]["id"] != "fact:location" {
			t.Fatalf("ada's entries: %v, want one fact:location", entries)
		}
		loc := entries[0]
		if loc["version"] != float64(writers) {
			t.Errorf("fact:location version %v, want %d: each statement replaced the one before", loc["version"], writers)
		}
		value := fmt.Sprint(loc["value"])
		conv := fmt.Sprint(loc["conversationId"])
		if !strings.Contains(value, "City"+strings.TrimPrefix(conv, "c")) {
			t.Errorf("the winning statement %s does not come from its own conversation %s", value, conv)
		}
		sup, _ := loc["supersedes"].(map[string]any)
		if sup == nil || sup["conversationId"] == conv {
			t.Errorf("supersedes = %v: the statement replaced must come from another conversation", sup)
		}
	})
}

// Explain follows an origin of a principal-scoped memory into the conversation that wrote it.
func TestExplainAcrossConversations(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"decisions","type":"causal","strategy":{"kind":"topK","threshold":0},"scope":"principal"}`)
		e.userSays("march", "ada", "Which refund window applies to damaged items?")
		rc := e.do("POST", "/v1/conversations/may/recall?principal=ada", "", `{"query":"refund window for damaged items","turn":1}`)
		if rc.status != 200 {
			t.Fatalf("recall: %d %s", rc.status, rc.body)
		}
		recallID := rc.json(t)["recallId"].(string)
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"How long do damaged items take?"},{"role":"assistant","content":"30 days."}],"recallIds":[%q]}`, recallID)
		if r, _ := e.turnFor("may", "ada", body); r.status != 201 {
			t.Fatalf("turn: %d %s", r.status, r.body)
		}
		r := e.do("GET", "/v1/conversations/may/turns/1/explain?principal=ada&depth=2", "", "")
		if r.status != 200 {
			t.Fatalf("explain: %d %s", r.status, r.body)
		}
		ex := r.json(t)
		origins, _ := ex["origins"].([]any)
		var found map[string]any
		for _, o := range origins {
			om := o.(map[string]any)
			if strings.HasPrefix(fmt.Sprint(om["entryId"]), "snap-1~march") {
				found = om
			}
		}
		if found == nil {
			t.Fatalf("no origin from march's snapshot: %v", origins)
		}
		entry, _ := found["entry"].(map[string]any)
		if entry == nil || entry["conversationId"] != "march" || entry["turn"] != 1.0 {
			t.Errorf("origin entry = %v, want march's turn 1", found["entry"])
		}
		earlier, _ := ex["earlier"].([]any)
		ok := false
		for _, x := range earlier {
			xm := x.(map[string]any)
			if xm["conversationId"] == "march" && xm["turn"] == 1.0 {
				ok = true
			}
		}
		if !ok {
			t.Errorf("explain did not follow the origin into march's turn 1: earlier = %v", earlier)
		}
	})
}

// Validation refuses scopes that mean nothing, says why and shows a fix.
func TestPrincipalScopeRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, tc := range []struct {
		body, detail string
		status       int
	}{
		{`{"id":"m","type":"episodic","strategy":{"kind":"window"},"scope":"principal"}`, "episodic", 422},
		{`{"id":"m","type":"semantic","strategy":{"kind":"topK"},"corpus":true,"scope":"principal"}`, "corpus", 422},
		// The spec's enum refuses an unknown scope before the domain sees it.
		{`{"id":"m","type":"semantic","strategy":{"kind":"topK"},"scope":"user"}`, "allowed values", 400},
	} {
		r := e.do("POST", "/v1/memories", "", tc.body)
		p := r.json(t)
		if r.status != tc.status || p["path"] != "scope" || !strings.Contains(fmt.Sprint(p["detail"]), tc.detail) || p["fix"] == nil {
			t.Errorf("%s: %d %v; want %d at scope naming %q with a fix", tc.body, r.status, p, tc.status, tc.detail)
		}
	}
	e.define(profileMemory)
	// The scope cannot change.
	r := e.do("PUT", "/v1/memories/profile", "", `{"type":"semantic","strategy":{"kind":"extract"}}`)
	if p := r.json(t); r.status != 422 || p["path"] != "scope" || p["fix"] != "principal" {
		t.Errorf("changing the scope: %d %v", r.status, p)
	}
	// A turn or a recall that names a principal-scoped memory but no principal is refused;
	// one that does not name it skips it and says why.
	if r, _ := e.turn("conv", `{"memories":["profile"],`+qa+`}`); r.status != 422 || r.json(t)["path"] != "principal" {
		t.Errorf("turn naming profile without a principal: %d %s", r.status, r.body)
	}
	e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
	_, tr := e.turn("conv", `{`+qa+`}`)
	skipped := false
	for _, s := range tr.Skipped {
		if s.MemoryID == "profile" && s.Reason == "no-principal" {
			skipped = true
		}
	}
	if !skipped {
		t.Errorf("turn without a principal: skipped %+v, want profile skipped as no-principal", tr.Skipped)
	}
	if r := e.do("POST", "/v1/conversations/conv/recall", "", `{"query":"name?","memories":["profile"]}`); r.status != 422 || r.json(t)["path"] != "principal" {
		t.Errorf("recall naming profile without a principal: %d %s", r.status, r.body)
	}
	// The catalogue and the capabilities describe the scopes.
	caps := e.do("GET", "/v1/capabilities", "", "").json(t)
	if sc, _ := caps["scopes"].([]any); len(sc) != 2 {
		t.Errorf("capabilities scopes: %v", caps["scopes"])
	}
	st := e.do("GET", "/v1/strategies/budget", "", "").json(t)
	if fmt.Sprint(st["scopes"]) != "[conversation]" {
		t.Errorf("budget scopes: %v, want [conversation] (it runs on episodic memories only)", st["scopes"])
	}
	st = e.do("GET", "/v1/strategies/extract", "", "").json(t)
	if fmt.Sprint(st["scopes"]) != "[conversation principal]" {
		t.Errorf("extract scopes: %v", st["scopes"])
	}
}
