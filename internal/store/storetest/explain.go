package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
)

// testExplainStore covers the records explanations are assembled from.
func testExplainStore(t *testing.T, s app.Store) {
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	ctx := t.Context()

	t.Run("TurnLinksUnion", func(t *testing.T) {
		t.Parallel()
		if err := s.LinkTurn(ctx, "x1", "ns", 3, "run-a", []string{"rcl_1"}, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.LinkTurn(ctx, "x1", "ns", 3, "run-b", []string{"rcl_1", "rcl_2"}, t0); err != nil {
			t.Fatal(err)
		}
		runs, recalls, err := s.TurnLinks(ctx, "x1", "ns", 3)
		if err != nil || len(runs) != 2 || len(recalls) != 2 {
			t.Errorf("links = %v %v %v", runs, recalls, err)
		}
		if runs, recalls, _ := s.TurnLinks(ctx, "x2", "ns", 3); runs != nil || recalls != nil {
			t.Errorf("another tenant sees links: %v %v", runs, recalls)
		}
		// A turn write carries its links in the same transaction.
		w := snapWrite("x1", "ns", 7, t0)
		w.LinkRunID, w.LinkRecallIDs = "run-w", []string{"rcl_w"}
		mustWrite(t, s, w)
		runs, recalls, _ = s.TurnLinks(ctx, "x1", "ns", 7)
		if fmt.Sprint(runs, recalls) != "[run-w] [rcl_w]" {
			t.Errorf("write links = %v %v", runs, recalls)
		}
	})

	// Explain finds the runs opened for a turn by the turn, however many runs later turns of
	// the conversation opened after it (it once looked only among the 200 most recent).
	t.Run("ExplainFindsTurnRunsPastRecentOnes", func(t *testing.T) {
		t.Parallel()
		id := core.Identity{Tenant: "x7", ConversationID: "long"}
		open := func(runID string, turn int, at time.Duration) {
			r := runs.Run{Tenant: id.Tenant, ID: runID, MaxEvents: 10, CreatedAt: t0.Add(at), Namespace: id.Namespace(),
				ConversationID: id.ConversationID, Turn: turn}
			if err := s.CreateRun(ctx, r, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		open("run-turn-3", 3, 0)
		for i := range 205 {
			open(fmt.Sprintf("run-later-%03d", i), 4+i, time.Duration(i+1)*time.Second)
		}
		// Another conversation's run for the same turn is not this one's.
		open2 := runs.Run{Tenant: id.Tenant, ID: "run-elsewhere", MaxEvents: 10, CreatedAt: t0, ConversationID: "other", Turn: 3,
			Namespace: core.Identity{Tenant: id.Tenant, ConversationID: "other"}.Namespace()}
		if err := s.CreateRun(ctx, open2, nil, nil); err != nil {
			t.Fatal(err)
		}
		ex, err := explain.New(explain.Deps{Store: s}).Explain(ctx, id, 3, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range ex.Context.Runs {
			got = append(got, r.RunID)
		}
		if fmt.Sprint(got) != "[run-turn-3]" {
			t.Errorf("turn 3's runs = %v, want [run-turn-3]", got)
		}
		listed, err := s.ListRuns(ctx, runs.RunQuery{Tenant: id.Tenant, Namespace: id.Namespace(), Turn: 100, Limit: 10})
		if err != nil || len(listed) != 1 || listed[0].ID != "run-later-096" {
			t.Errorf("ListRuns(turn 100) = %v, %v; want run-later-096 alone", listed, err)
		}
	})

	t.Run("RecallsFor", func(t *testing.T) {
		t.Parallel()
		id := core.Identity{Tenant: "x3", ConversationID: "c"}
		other := core.Identity{Tenant: "x3", ConversationID: "d"}
		save := func(rid string, who core.Identity, turn int, at time.Duration) {
			r := recall.RecallResult{RecallID: rid, Identity: who, Turn: turn, QueryHash: "sha256:0", CreatedAt: t0.Add(at),
				Memories: []recall.MemoryRecall{}, Injections: []recall.Injection{}}
			if err := s.SaveRecall(ctx, who.Tenant, r); err != nil {
				t.Fatal(err)
			}
		}
		save("rcl_b", id, 2, 2*time.Second)
		save("rcl_a", id, 2, time.Second)
		save("rcl_c", id, 0, 3*time.Second)
		save("rcl_d", id, 5, 0)
		save("rcl_e", other, 2, 0)
		got, err := s.RecallsFor(ctx, "x3", id.Namespace(), 2, []string{"rcl_c", "rcl_e"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.RecallID)
		}
		if fmt.Sprint(ids) != "[rcl_a rcl_b rcl_c]" {
			t.Errorf("recalls for turn 2 = %v (want by turn and by id, this conversation only, oldest first)", ids)
		}
		if got, _ := s.RecallsFor(ctx, "x4", id.Namespace(), 2, []string{"rcl_a"}); len(got) != 0 {
			t.Errorf("another tenant reads receipts: %v", got)
		}
	})

	t.Run("TurnEntriesAndLookup", func(t *testing.T) {
		t.Parallel()
		w := snapWrite("x5", "ns", 1, t0)
		build := w.Build
		w.Build = func(turn int) ([]core.Entry, error) {
			es, err := build(turn)
			m := msgEntry("x5", "ns", turn, 0)
			m.MemoryID = "chat"
			expiring := mkEntry("x5", "ns", "short", core.KindMessage, fmt.Sprintf("msg-%d-0", turn), turn, 0)
			expiring.ExpiresAt = t0.Add(time.Minute)
			return append(es, m, expiring), err
		}
		mustWrite(t, s, w)
		got, err := s.TurnEntries(ctx, "x5", "ns", "", 1, t0.Add(time.Hour))
		if err != nil || len(got) != 2 {
			t.Fatalf("turn entries = %v, %v (want the snapshot and the live message)", entryIDs(got), err)
		}
		lk, err := s.LookupEntry(ctx, "x5", "ns", causalMem, "snap-1", t0)
		if err != nil || !lk.Found || lk.Expired || lk.Entry.ID != "snap-1" {
			t.Errorf("live lookup = %+v %v", lk, err)
		}
		if lk, _ := s.LookupEntry(ctx, "x5", "ns", "short", "msg-1-0", t0.Add(time.Hour)); !lk.Found || !lk.Expired {
			t.Errorf("expired lookup = %+v", lk)
		}
		if lk, _ := s.LookupEntry(ctx, "x5", "ns", causalMem, "snap-9", t0); lk.Found || lk.Forgotten {
			t.Errorf("missing lookup = %+v", lk)
		}
		if _, err := s.ForgetNamespace(ctx, "x5", "ns"); err != nil {
			t.Fatal(err)
		}
		if lk, _ := s.LookupEntry(ctx, "x5", "ns", causalMem, "snap-1", t0); lk.Found || !lk.Forgotten {
			t.Errorf("forgotten lookup = %+v", lk)
		}
		if lk, _ := s.LookupEntry(ctx, "x6", "ns", causalMem, "snap-1", t0); lk.Found || lk.Forgotten {
			t.Errorf("another tenant's tombstone leaks: %+v", lk)
		}
	})

	t.Run("Ablations", func(t *testing.T) {
		t.Parallel()
		for i, a := range []explain.Ablation{
			{ID: "abl_1", Excluded: []string{"memory:why#snap-1"}, Answer: "a", Flipped: true, CreatedAt: t0},
			{ID: "abl_2", Excluded: []string{}, Answer: "b", Flipped: false, CreatedAt: t0.Add(time.Second)},
		} {
			if err := s.SaveAblation(ctx, "x7", "ns", 3, a, nil); err != nil {
				t.Fatalf("save %d: %v", i, err)
			}
		}
		got, err := s.Ablations(ctx, "x7", "ns", 3)
		if err != nil || len(got) != 2 || got[0].ID != "abl_1" || !got[0].Flipped || len(got[1].Excluded) != 0 || got[0].Excluded[0] != "memory:why#snap-1" {
			t.Errorf("ablations = %+v %v", got, err)
		}
		if got, _ := s.Ablations(ctx, "x8", "ns", 3); len(got) != 0 {
			t.Errorf("another tenant reads ablations")
		}
	})
}
