package server_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// decode reads r's body into v.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if r.status != 200 && r.status != 201 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decode: %v\n%s", err, r.body)
	}
	return v
}

type browseTurn struct {
	Turn             int    `json:"turn"`
	CreatedAt        string `json:"createdAt"`
	MessagesMemoryID string `json:"messagesMemoryId"`
	Messages         []struct {
		Role, Content string
		Length        int
		Truncated     bool
	} `json:"messages"`
	Snapshot *struct {
		EntryID    string   `json:"entryId"`
		Reported   bool     `json:"reported"`
		Decisions  int      `json:"decisions"`
		ToolCalls  int      `json:"toolCalls"`
		DurationMs *float64 `json:"durationMs"`
		Iterations *int     `json:"iterations"`
	} `json:"snapshot"`
	Entries []struct {
		MemoryID string   `json:"memoryId"`
		IDs      []string `json:"ids"`
	} `json:"entries"`
	RunIDs    []string          `json:"runIds"`
	RecallIDs []string          `json:"recallIds"`
	Links     map[string]string `json:"links"`
}

// TestBrowseAConversation follows the README's story through the read side frontends use, on
// both stores: the conversation in the list with its counts, its turns newest first with
// their links, one turn whole, its receipts, where snap-1 was used, and the ablations of
// turn 3 with Location on every 201.
func TestBrowseAConversation(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.2}}`)
		long := strings.Repeat("word ", 100)
		r, _ := e.turn("support-4821", `{"messages":[{"role":"user","content":"What is the refund window for damaged items?"},
			{"role":"assistant","content":"Damaged items are refunded within 30 days. `+long+`"}],
			"evidence":{"iterations":1,"decisions":[{"stageId":"policy","chosen":"30-day window","rule":"old handbook"}],"durationMs":840,"tokenUsage":{"input":512,"output":64}}}`)
		if got := r.header.Get("Location"); got != "/v1/conversations/support-4821/turns/1" {
			t.Errorf("turn 1 Location = %q", got)
		}
		e.turn("support-4821", `{"messages":[{"role":"user","content":"Do you ship to Norway?"},{"role":"assistant","content":"Yes."}]}`)
		rc := decode[map[string]any](t, e.do("POST", "/v1/conversations/support-4821/recall", "",
			`{"query":"How long do refunds for damaged items take?","turn":3,"runId":"run-3"}`))
		recallID := rc["recallId"].(string)
		if r := e.do("POST", "/v1/runs", "", `{"runId":"run-3","conversationId":"support-4821","turn":3}`); r.status != 201 {
			t.Fatalf("open run: %d %s", r.status, r.body)
		}
		// While turn 3 is under way it is listed, with its receipt and run and no messages.
		turns := decode[struct {
			Turns      []browseTurn `json:"turns"`
			NextCursor string       `json:"nextCursor"`
		}](t, e.do("GET", "/v1/conversations/support-4821/turns", "", ""))
		if len(turns.Turns) != 3 || turns.Turns[0].Turn != 3 || len(turns.Turns[0].Messages) != 0 ||
			fmt.Sprint(turns.Turns[0].RunIDs, turns.Turns[0].RecallIDs) != fmt.Sprint([]string{"run-3"}, []string{recallID}) {
			t.Fatalf("turns under way = %+v", turns.Turns)
		}
		r, _ = e.turn("support-4821", `{"runId":"run-3","recallIds":["`+recallID+`"],"messages":[{"role":"user","content":"How long do refunds for damaged items take?"},{"role":"assistant","content":"We refund damaged items within 30 days."}]}`)
		if got := r.header.Get("Location"); got != "/v1/conversations/support-4821/turns/3" {
			t.Errorf("turn 3 Location = %q", got)
		}

		// The list of conversations.
		convs := decode[struct {
			Conversations []struct {
				ConversationID string `json:"conversationId"`
				LastTurn       int    `json:"lastTurn"`
				EntryCount     int    `json:"entryCount"`
				Memories       []struct {
					MemoryID   string `json:"memoryId"`
					EntryCount int    `json:"entryCount"`
				} `json:"memories"`
				Links map[string]string `json:"links"`
			} `json:"conversations"`
		}](t, e.do("GET", "/v1/conversations", "", ""))
		if len(convs.Conversations) != 1 {
			t.Fatalf("conversations = %+v", convs)
		}
		c := convs.Conversations[0]
		if c.ConversationID != "support-4821" || c.LastTurn != 3 || c.EntryCount != 9 || fmt.Sprint(c.Memories) != "[{chat 6} {why 3}]" ||
			c.Links["turns"] != "/v1/conversations/support-4821/turns" || c.Links["runs"] != "/v1/runs?conversationId=support-4821" {
			t.Errorf("conversation = %+v", c)
		}
		if got := decode[map[string][]any](t, e.do("GET", "/v1/conversations?memory=nope", "", ""))["conversations"]; len(got) != 0 {
			t.Errorf("memory=nope lists %v", got)
		}

		// Turns, paged one at a time, newest first.
		var seen []int
		cursor := ""
		for range 4 {
			path := "/v1/conversations/support-4821/turns?limit=1"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			page := decode[struct {
				Turns      []browseTurn `json:"turns"`
				NextCursor string       `json:"nextCursor"`
			}](t, e.do("GET", path, "", ""))
			for _, tr := range page.Turns {
				seen = append(seen, tr.Turn)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(seen, []int{3, 2, 1}) {
			t.Errorf("paged turns = %v", seen)
		}
		list := decode[struct {
			Turns []browseTurn `json:"turns"`
		}](t, e.do("GET", "/v1/conversations/support-4821/turns", "", ""))
		t1 := list.Turns[2]
		if t1.Messages[1].Length <= 280 || !t1.Messages[1].Truncated || len([]rune(t1.Messages[1].Content)) != 280 {
			t.Errorf("turn 1's long answer in the list = %+v", t1.Messages[1])
		}
		if s := t1.Snapshot; s == nil || !s.Reported || s.Decisions != 1 || s.ToolCalls != 0 || s.DurationMs == nil || *s.DurationMs != 840 {
			t.Errorf("turn 1's snapshot = %+v", t1.Snapshot)
		}
		if s := list.Turns[1].Snapshot; s == nil || s.Reported || s.DurationMs != nil || s.Iterations != nil {
			t.Errorf("turn 2 posted without evidence shows figures: %+v", s)
		}
		t3 := list.Turns[0]
		if fmt.Sprint(t3.RunIDs) != "[run-3]" || fmt.Sprint(t3.RecallIDs) != "["+recallID+"]" || t3.MessagesMemoryID != "chat" ||
			fmt.Sprint(t3.Entries) != "[{chat [msg-3-0 msg-3-1]} {why [snap-3]}]" ||
			t3.Links["explain"] != "/v1/conversations/support-4821/turns/3/explain" || t3.Links["recalls"] != "/v1/conversations/support-4821/recalls?turn=3" {
			t.Errorf("turn 3 = %+v", t3)
		}
		one := decode[browseTurn](t, e.do("GET", "/v1/conversations/support-4821/turns/1", "", ""))
		if one.Messages[1].Truncated || !strings.HasSuffix(one.Messages[1].Content, "word ") {
			t.Errorf("getTurn cuts the message: %+v", one.Messages[1])
		}
		if r := e.do("GET", "/v1/conversations/support-4821/turns/9", "", ""); r.status != 404 {
			t.Errorf("turn 9 = %d", r.status)
		}
		if r := e.do("GET", "/v1/conversations/support-4821/turns/1?principal=someone", "", ""); r.status != 404 {
			t.Errorf("turn 1 under another principal = %d", r.status)
		}

		// Receipts of the conversation and of turn 3.
		rs := decode[struct {
			Recalls []struct {
				RecallID string            `json:"recallId"`
				Turn     int               `json:"turn"`
				Admitted []string          `json:"admitted"`
				Links    map[string]string `json:"links"`
			} `json:"recalls"`
		}](t, e.do("GET", "/v1/conversations/support-4821/recalls?turn=3", "", ""))
		if len(rs.Recalls) != 1 || rs.Recalls[0].RecallID != recallID || !slices.Contains(rs.Recalls[0].Admitted, "memory:why#snap-1") ||
			rs.Recalls[0].Links["self"] != "/v1/recalls/"+recallID {
			t.Errorf("turn 3's receipts = %+v", rs)
		}

		// Where snap-1 was used: offered to turn 3 by that receipt.
		usage := decode[struct {
			InjectionID string `json:"injectionId"`
			Recalls     []struct {
				RecallID  string   `json:"recallId"`
				Score     *float64 `json:"score"`
				Rank      int      `json:"rank"`
				Threshold *float64 `json:"threshold"`
				Turns     []int    `json:"turns"`
			} `json:"recalls"`
			Turns []int `json:"turns"`
		}](t, e.do("GET", "/v1/conversations/support-4821/entries/snap-1/usage?memory=why", "", ""))
		if usage.InjectionID != "memory:why#snap-1" || len(usage.Recalls) != 1 || usage.Recalls[0].Rank != 1 || usage.Recalls[0].Score == nil ||
			*usage.Recalls[0].Threshold != 0.2 || fmt.Sprint(usage.Turns) != "[3]" {
			t.Errorf("usage of snap-1 = %+v", usage)
		}
		if got := decode[map[string]any](t, e.do("GET", "/v1/conversations/support-4821/entries/snap-2/usage?memory=why", "", ""))["recalls"]; len(got.([]any)) != 0 {
			t.Errorf("snap-2, never admitted, was used: %v", got)
		}

		// Ablations: recorded with Location, listed oldest first, read one by one.
		r = e.do("POST", "/v1/conversations/support-4821/turns/3/ablations", "", `{"excluded":[],"answer":"30 days.","flipped":false}`)
		base := r.header.Get("Location")
		if r.status != 201 || !strings.HasPrefix(base, "/v1/conversations/support-4821/turns/3/ablations/abl_") {
			t.Fatalf("record baseline: %d Location %q", r.status, base)
		}
		e.do("POST", "/v1/conversations/support-4821/turns/3/ablations", "", `{"excluded":["memory:why#snap-1"],"answer":"14 days.","flipped":true}`)
		abl := decode[struct {
			Ablations []struct {
				ID     string `json:"id"`
				Answer string `json:"answer"`
			} `json:"ablations"`
		}](t, e.do("GET", "/v1/conversations/support-4821/turns/3/ablations", "", ""))
		if len(abl.Ablations) != 2 || abl.Ablations[0].Answer != "30 days." || abl.Ablations[1].Answer != "14 days." {
			t.Errorf("ablations = %+v", abl)
		}
		if got := decode[map[string]any](t, e.do("GET", base, "", "")); got["answer"] != "30 days." || got["flipped"] != false {
			t.Errorf("GET %s = %v", base, got)
		}
		if r := e.do("GET", strings.Replace(base, "/turns/3/", "/turns/2/", 1), "", ""); r.status != 404 {
			t.Errorf("the ablation under turn 2 = %d", r.status)
		}
		// A cursor is bound to its query.
		page := decode[map[string]any](t, e.do("GET", "/v1/conversations/support-4821/turns/3/ablations?limit=1", "", ""))
		cur := page["nextCursor"].(string)
		if r := e.do("GET", "/v1/conversations/support-4821/turns/2/ablations?cursor="+url.QueryEscape(cur), "", ""); r.status != 400 || r.json(t)["code"] != "invalid-cursor" {
			t.Errorf("another turn's cursor = %d %s", r.status, r.body)
		}
	})
}

// TestBrowseIsTenantScoped: another tenant's conversations, turns, receipts and usage are
// invisible, as if they did not exist.
func TestBrowseIsTenantScoped(t *testing.T) {
	t.Parallel()
	e := setup(t, withKeys)
	if r := e.do("POST", "/v1/memories", keyAcme, `{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`); r.status != 201 {
		t.Fatal(r.status)
	}
	if r := e.do("POST", "/v1/conversations/c1/turns?principal=ada", keyAcme, `{"messages":[{"role":"user","content":"hi there"}]}`); r.status != 201 ||
		r.header.Get("Location") != "/v1/conversations/c1/turns/1?principal=ada" {
		t.Fatalf("turn: %d %q", r.status, r.header.Get("Location"))
	}
	acme := decode[map[string][]map[string]any](t, e.do("GET", "/v1/conversations?principal=ada", keyAcme, ""))
	if len(acme["conversations"]) != 1 || acme["conversations"][0]["principal"] != "ada" {
		t.Errorf("acme's = %v", acme)
	}
	if got := decode[map[string][]any](t, e.do("GET", "/v1/conversations", keyGlobex, ""))["conversations"]; len(got) != 0 {
		t.Errorf("globex lists %v", got)
	}
	if got := decode[map[string][]any](t, e.do("GET", "/v1/conversations/c1/turns?principal=ada", keyGlobex, ""))["turns"]; len(got) != 0 {
		t.Errorf("globex lists turns %v", got)
	}
	if r := e.do("GET", "/v1/conversations/c1/turns/1?principal=ada", keyGlobex, ""); r.status != 404 {
		t.Errorf("globex reads the turn: %d", r.status)
	}
	if r := e.do("GET", "/v1/conversations", "", ""); r.status != 401 {
		t.Errorf("no key = %d", r.status)
	}
}
