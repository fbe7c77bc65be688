package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/core/turns"
)

// testReadSide covers what frontends read: conversations, turns, receipts by conversation,
// where an entry was used, one ablation.
func testReadSide(t *testing.T, s app.Store) {
	t.Run("Conversations", func(t *testing.T) { t.Parallel(); readConversations(t, s) })
	t.Run("Turns", func(t *testing.T) { t.Parallel(); readTurns(t, s) })
	t.Run("Recalls", func(t *testing.T) { t.Parallel(); readRecalls(t, s) })
	t.Run("Ablation", func(t *testing.T) { t.Parallel(); readAblation(t, s) })
}

// factEntry is a fact a turn wrote.
func factEntry(tenant, ns, mem, key string, turn int) core.Entry {
	e := mkEntry(tenant, ns, mem, core.KindFact, "fact:"+key, 0, 0)
	e.SourceTurn = turn
	return e
}

func readConversations(t *testing.T, s app.Store) {
	const tenant = "rc"
	ids := []core.Identity{
		{Tenant: tenant, ConversationID: "c1"},
		{Tenant: tenant, Principal: "ada", ConversationID: "c2"},
		{Tenant: tenant, Principal: "ada", ConversationID: "c1"},
		{Tenant: tenant, Principal: "bob", ConversationID: "c3"},
		{Tenant: tenant, Principal: "ada", ConversationID: "gone"},
	}
	for i, id := range ids {
		ns := id.Namespace()
		w := chatTurn(tenant, ns, 1, true, t0.Add(time.Duration(i)*time.Minute))
		mustWrite(t, s, w)
		if i == 1 { // c2 has a second turn and a fact in "facts"
			w := chatTurn(tenant, ns, 1, true, t0.Add(time.Hour))
			build := w.Build
			w.Build = func(turn int) ([]core.Entry, error) {
				es, err := build(turn)
				return append(es, factEntry(tenant, ns, "facts", "name", turn)), err
			}
			mustWrite(t, s, w)
		}
	}
	// Another tenant's conversation, and a corpus chunk: never listed.
	mustWrite(t, s, chatTurn("rc-other", core.Identity{Tenant: "rc-other", ConversationID: "c9"}.Namespace(), 1, true, t0))
	if _, err := s.ForgetNamespace(t.Context(), tenant, ids[4].Namespace()); err != nil {
		t.Fatal(err)
	}
	all := core.Identity{Tenant: tenant}.TenantPrefix()
	list := func(q turns.ConversationQuery) ([]turns.ConversationRecord, string) {
		t.Helper()
		q.Tenant, q.Now = tenant, t0.Add(24*time.Hour)
		recs, next, err := s.ListConversations(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		return recs, next
	}
	names := func(recs []turns.ConversationRecord) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.Namespace)
		}
		return out
	}
	want := []string{ids[0].Namespace(), ids[2].Namespace(), ids[1].Namespace(), ids[3].Namespace()} // byte order: '_' < 'a'

	recs, next := list(turns.ConversationQuery{Prefix: all, Limit: 10})
	if !slices.Equal(names(recs), want) || next != "" {
		t.Fatalf("conversations = %v next %q, want %v and no next", names(recs), next, want)
	}
	c2 := recs[2]
	if fmt.Sprint(c2.Memories) != "[{causal 2} {chat 4} {facts 1}]" {
		t.Errorf("c2 counts = %v, want causal 2, chat 4, facts 1 by memory id", c2.Memories)
	}
	if c2.LastTurn != 2 || !c2.CreatedAt.Equal(t0.Add(time.Minute).Truncate(time.Microsecond)) || !c2.UpdatedAt.Equal(t0.Add(time.Hour).Truncate(time.Microsecond)) {
		t.Errorf("c2 = last turn %d, %v .. %v", c2.LastTurn, c2.CreatedAt, c2.UpdatedAt)
	}
	// Paging: two then the rest, in order, nothing twice.
	page1, next := list(turns.ConversationQuery{Prefix: all, Limit: 2})
	page2, next2 := list(turns.ConversationQuery{Prefix: all, Limit: 2, After: next})
	if got := append(names(page1), names(page2)...); !slices.Equal(got, want) || next == "" || next2 != "" {
		t.Errorf("paged = %v (next %q, %q), want %v", got, next, next2, want)
	}
	// One principal's.
	recs, _ = list(turns.ConversationQuery{Prefix: core.Identity{Tenant: tenant, Principal: "ada"}.PrincipalPrefix(), Limit: 10})
	if !slices.Equal(names(recs), []string{ids[2].Namespace(), ids[1].Namespace()}) {
		t.Errorf("ada's = %v", names(recs))
	}
	// Where one memory holds entries.
	recs, _ = list(turns.ConversationQuery{Prefix: all, MemoryID: "facts", Limit: 10})
	if !slices.Equal(names(recs), []string{ids[1].Namespace()}) || len(recs[0].Memories) != 3 {
		t.Errorf("with facts = %v (%v), want c2 with every memory counted", names(recs), recs)
	}
	// Expired entries are not counted.
	w := chatTurn(tenant, core.Identity{Tenant: tenant, ConversationID: "ttl"}.Namespace(), 1, true, t0)
	build := w.Build
	w.Build = func(turn int) ([]core.Entry, error) {
		es, err := build(turn)
		for i := range es {
			es[i].ExpiresAt = t0.Add(time.Minute)
		}
		return es, err
	}
	mustWrite(t, s, w)
	recs, _ = list(turns.ConversationQuery{Prefix: all, Limit: 10})
	for _, r := range recs {
		if r.Namespace == w.Namespace && len(r.Memories) != 0 {
			t.Errorf("an expired conversation counts %v", r.Memories)
		}
	}
}

func readTurns(t *testing.T, s app.Store) {
	const tenant = "rt"
	ctx := t.Context()
	id := core.Identity{Tenant: tenant, ConversationID: "c"}
	ns := id.Namespace()
	for i := range 3 {
		w := chatTurn(tenant, ns, 1, true, t0.Add(time.Duration(i)*time.Minute))
		if i == 1 {
			w.LinkRunID, w.LinkRecallIDs = "run-2", []string{"rcl_linked"}
			build := w.Build
			w.Build = func(turn int) ([]core.Entry, error) {
				es, err := build(turn)
				return append(es, factEntry(tenant, ns, "facts", "name", turn)), err
			}
		}
		mustWrite(t, s, w)
	}
	// Turn 5 is under way: a receipt and a run, nothing posted yet. Turn 9 has a receipt of
	// another conversation only.
	save := func(rid string, who core.Identity, turn int, runID string) {
		r := recall.RecallResult{RecallID: rid, Identity: who, Turn: turn, RunID: runID, QueryHash: "sha256:0",
			CreatedAt: t0.Add(time.Hour), Memories: []recall.MemoryRecall{}, Injections: []recall.Injection{}}
		if err := s.SaveRecall(ctx, who.Tenant, r); err != nil {
			t.Fatal(err)
		}
	}
	save("rcl_t5", id, 5, "run-5")
	save("rcl_t2", id, 2, "")
	save("rcl_other", core.Identity{Tenant: tenant, ConversationID: "d"}, 9, "")
	run := runs.Run{Tenant: tenant, ID: "run-5", Namespace: ns, ConversationID: "c", Turn: 5, MaxEvents: 10, CreatedAt: t0}
	if err := s.CreateRun(ctx, run, nil, nil); err != nil {
		t.Fatal(err)
	}
	list := func(q turns.TurnQuery) []turns.TurnRecord {
		t.Helper()
		q.Tenant, q.Namespace, q.Now = tenant, ns, t0.Add(2*time.Hour)
		recs, err := s.ListTurns(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	numbers := func(recs []turns.TurnRecord) []int {
		var out []int
		for _, r := range recs {
			out = append(out, r.Turn)
		}
		return out
	}
	recs := list(turns.TurnQuery{Limit: 10})
	if got := numbers(recs); !slices.Equal(got, []int{5, 3, 2, 1}) {
		t.Fatalf("turns = %v, want [5 3 2 1]", got)
	}
	if r := recs[0]; len(r.Entries) != 0 || fmt.Sprint(r.RecallIDs, r.RecallRunIDs, r.RunIDs) != "[rcl_t5] [run-5] [run-5]" {
		t.Errorf("turn 5 = %+v", r)
	}
	r2 := recs[2]
	if got := entryIDs(r2.Entries); !slices.Equal(got, []string{"snap-2", "msg-2-0", "msg-2-1", "fact:name"}) &&
		!slices.Equal(got, []string{"msg-2-0", "msg-2-1", "snap-2", "fact:name"}) {
		t.Errorf("turn 2 entries = %v", got)
	}
	if fmt.Sprint(r2.LinkedRunIDs, r2.LinkedRecallIDs, r2.RecallIDs) != "[run-2] [rcl_linked] [rcl_t2]" {
		t.Errorf("turn 2 links = %v %v %v", r2.LinkedRunIDs, r2.LinkedRecallIDs, r2.RecallIDs)
	}
	for _, e := range r2.Entries {
		if e.Embedding != nil || len(e.Value) == 0 {
			t.Errorf("%s read with embedding %v / value %s", e.ID, e.Embedding, e.Value)
		}
	}
	// Pages below a turn, newest first.
	if got := numbers(list(turns.TurnQuery{Before: 5, Limit: 2})); !slices.Equal(got, []int{3, 2}) {
		t.Errorf("below 5, two = %v", got)
	}
	if got := numbers(list(turns.TurnQuery{Before: 2, Limit: 2})); !slices.Equal(got, []int{1}) {
		t.Errorf("below 2 = %v", got)
	}
	// Chosen turns, newest first, one of them with nothing stored.
	got := list(turns.TurnQuery{Turns: []int{3, 7}})
	if len(got) != 2 || got[1].Turn != 3 || len(got[1].Entries) != 3 || got[0].Turn != 7 || got[0].Exists() {
		t.Errorf("turns 3 and 7 = %+v", got)
	}
	// Another tenant sees nothing.
	other, err := s.ListTurns(ctx, turns.TurnQuery{Tenant: "rt-other", Namespace: ns, Limit: 10, Now: t0})
	if err != nil || len(other) != 0 {
		t.Errorf("another tenant lists %v, %v", other, err)
	}
}

func readRecalls(t *testing.T, s app.Store) {
	const tenant = "rr2"
	ctx := t.Context()
	id := core.Identity{Tenant: tenant, ConversationID: "c"}
	ns := id.Namespace()
	score := func(f float64) *float64 { return &f }
	save := func(rid string, turn int, at time.Duration, admitted ...string) {
		t.Helper()
		var cands []recall.Candidate
		for i, e := range admitted {
			cands = append(cands, recall.Candidate{ID: e, MemoryID: "why", Score: score(0.5 - float64(i)/10), Rank: i + 1, Admitted: true})
		}
		cands = append(cands, recall.Candidate{ID: "snap-9", MemoryID: "why", Score: score(0.01), Rank: len(cands) + 1, Reason: "below-threshold"})
		r := recall.RecallResult{RecallID: rid, Identity: id, Turn: turn, QueryHash: "sha256:0", CreatedAt: t0.Add(at),
			Memories:   []recall.MemoryRecall{{MemoryID: "why", Strategy: strategy(t, `{"kind":"topK"}`), Evidence: recall.Evidence{Threshold: score(0.2), Candidates: cands}}},
			Injections: []recall.Injection{}}
		if err := s.SaveRecall(ctx, tenant, r); err != nil {
			t.Fatal(err)
		}
	}
	save("rcl_1", 2, time.Second, "snap-1")
	save("rcl_2", 3, 2*time.Second, "snap-1", "snap-2")
	save("rcl_3", 0, 3*time.Second, "snap-2")
	save("rcl_4", 4, 3*time.Second) // same instant as rcl_3: the id breaks the tie
	if err := s.LinkTurn(ctx, tenant, ns, 4, "", []string{"rcl_3"}, t0); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []recall.RecallRecord) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	page, next, err := s.ListRecalls(ctx, recall.RecallQuery{Tenant: tenant, Namespace: ns, Limit: 3})
	if err != nil || !slices.Equal(ids(page), []string{"rcl_4", "rcl_3", "rcl_2"}) || next == "" {
		t.Fatalf("first page = %v next %q %v", ids(page), next, err)
	}
	if fmt.Sprint(page[2].Admitted) != "[memory:why#snap-1 memory:why#snap-2]" || page[2].Turn != 3 || !page[2].CreatedAt.Equal(t0.Add(2*time.Second).Truncate(time.Microsecond)) {
		t.Errorf("rcl_2 = %+v", page[2])
	}
	page, next, err = s.ListRecalls(ctx, recall.RecallQuery{Tenant: tenant, Namespace: ns, Limit: 3, After: next})
	if err != nil || !slices.Equal(ids(page), []string{"rcl_1"}) || next != "" {
		t.Errorf("second page = %v next %q %v", ids(page), next, err)
	}
	page, _, _ = s.ListRecalls(ctx, recall.RecallQuery{Tenant: tenant, Namespace: ns, Turn: 4, Limit: 10})
	if !slices.Equal(ids(page), []string{"rcl_4", "rcl_3"}) {
		t.Errorf("turn 4's = %v, want its own and the one it was posted with", ids(page))
	}
	if page, _, _ := s.ListRecalls(ctx, recall.RecallQuery{Tenant: "rr2-other", Namespace: ns, Limit: 10}); len(page) != 0 {
		t.Errorf("another tenant lists %v", ids(page))
	}

	// Admitting: snap-1 by rcl_2 and rcl_1, newest first, paged one at a time.
	var got []string
	after := ""
	for range 3 {
		rs, next, err := s.RecallsAdmitting(ctx, tenant, ns, "memory:why#snap-1", after, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			got = append(got, r.RecallID)
		}
		if after = next; after == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"rcl_2", "rcl_1"}) {
		t.Errorf("admitting snap-1 = %v", got)
	}
	if rs, _, _ := s.RecallsAdmitting(ctx, tenant, ns, "memory:why#snap-9", "", 10); len(rs) != 0 {
		t.Errorf("a rejected candidate counts as admitted: %d receipts", len(rs))
	}
	links, err := s.TurnsLinking(ctx, tenant, ns, []string{"rcl_3", "rcl_1"})
	if err != nil || fmt.Sprint(links) != "map[rcl_3:[4]]" {
		t.Errorf("turns linking = %v %v", links, err)
	}
}

func readAblation(t *testing.T, s app.Store) {
	ctx := t.Context()
	id := core.Identity{Tenant: "ra", ConversationID: "c"}
	if err := s.SaveAblation(ctx, "ra", id.Namespace(), 3, explainAblation("abl_0123456789", t0), nil); err != nil {
		t.Fatal(err)
	}
	ns, turn, a, err := s.Ablation(ctx, "ra", "abl_0123456789")
	if err != nil || ns != id.Namespace() || turn != 3 || a.Answer != "fourteen days" || !a.Flipped || fmt.Sprint(a.Excluded) != "[memory:why#snap-1]" {
		t.Errorf("ablation = %q %d %+v %v", ns, turn, a, err)
	}
	if _, _, _, err := s.Ablation(ctx, "ra-other", "abl_0123456789"); err == nil {
		t.Error("another tenant reads the ablation")
	}
}

func explainAblation(id string, at time.Time) explain.Ablation {
	return explain.Ablation{ID: id, Excluded: []string{"memory:why#snap-1"}, Answer: "fourteen days", Flipped: true, CreatedAt: at}
}
