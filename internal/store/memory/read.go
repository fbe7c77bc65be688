package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
)

// The read side for frontends: conversations, turns, receipts by
// conversation, where an entry was used. Every method scans the maps it
// reads; the in-memory store holds what one process can.

var (
	_ turns.ReadStore     = (*Store)(nil)
	_ recall.ReceiptStore = (*Store)(nil)
	_ explain.UsageStore  = (*Store)(nil)
)

// ListConversations examines the tenant's namespaces under q.Prefix after
// q.After, in byte order, where q.MemoryID (or any memory) holds entries.
func (s *Store) ListConversations(ctx context.Context, q turns.ConversationQuery) ([]turns.ConversationRecord, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	now := normalise(q.Now)
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	var names []string
	for k, byID := range s.es.entries {
		if k.tenant != q.Tenant || k.namespace == core.CorpusNamespace || !strings.HasPrefix(k.namespace, q.Prefix) || k.namespace <= q.After {
			continue
		}
		if q.MemoryID != "" && !slices.ContainsFunc(mapValues(byID), func(e core.Entry) bool { return e.MemoryID == q.MemoryID }) {
			continue
		}
		if len(byID) > 0 {
			names = append(names, k.namespace)
		}
	}
	slices.Sort(names)
	next := ""
	if len(names) > q.Limit {
		names = names[:q.Limit]
		next = names[len(names)-1]
	}
	out := make([]turns.ConversationRecord, 0, len(names))
	for _, ns := range names {
		r := turns.ConversationRecord{Namespace: ns, Memories: []turns.MemoryCount{}}
		counts := map[string]int64{}
		for _, e := range s.es.entries[nsKey{q.Tenant, ns}] {
			if !live(e, now) {
				continue
			}
			counts[e.MemoryID]++
			r.LastTurn = max(r.LastTurn, e.Turn)
			if r.CreatedAt.IsZero() || e.CreatedAt.Before(r.CreatedAt) {
				r.CreatedAt = e.CreatedAt
			}
			if e.UpdatedAt.After(r.UpdatedAt) {
				r.UpdatedAt = e.UpdatedAt
			}
		}
		for m, n := range counts {
			r.Memories = append(r.Memories, turns.MemoryCount{MemoryID: m, Entries: n})
		}
		slices.SortFunc(r.Memories, func(a, b turns.MemoryCount) int { return cmp.Compare(a.MemoryID, b.MemoryID) })
		out = append(out, r)
	}
	return out, next, nil
}

func mapValues(m map[entryKey]core.Entry) []core.Entry {
	out := make([]core.Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	return out
}

// turnKinds are the kinds whose ids carry a turn.
func turnKind(k core.EntryKind) bool {
	return k == core.KindMessage || k == core.KindSnapshot || k == core.KindBeat
}

// ListTurns returns the records of q.Turns, or of up to q.Limit turns below q.Before.
func (s *Store) ListTurns(ctx context.Context, q turns.TurnQuery) ([]turns.TurnRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := normalise(q.Now)
	k := nsKey{q.Tenant, q.Namespace}
	recs := map[int]*turns.TurnRecord{}
	get := func(t int) *turns.TurnRecord {
		r := recs[t]
		if r == nil {
			r = &turns.TurnRecord{Turn: t}
			recs[t] = r
		}
		return r
	}
	wanted := func(t int) bool {
		if t < 1 {
			return false
		}
		if q.Turns != nil {
			return slices.Contains(q.Turns, t)
		}
		return q.Before <= 0 || t < q.Before
	}

	// Receipts and runs are read first, outside the entry lock's scope for runs.
	type receipt struct {
		id, runID string
		turn      int
		at        time.Time
	}
	var receipts []receipt
	s.es.mu.RLock()
	for rk, b := range s.es.recalls {
		if rk[0] != q.Tenant {
			continue
		}
		var r recall.RecallResult
		if err := json.Unmarshal(b, &r); err != nil {
			s.es.mu.RUnlock()
			return nil, err
		}
		if r.Identity.Namespace() == q.Namespace && wanted(r.Turn) {
			receipts = append(receipts, receipt{id: r.RecallID, runID: r.RunID, turn: r.Turn, at: r.CreatedAt})
		}
	}
	for _, e := range s.es.entries[k] {
		if !live(e, now) {
			continue
		}
		switch {
		case turnKind(e.Kind) && wanted(e.Turn):
			r := get(e.Turn)
			c := copyEntry(e)
			c.Embedding = nil
			r.Entries = append(r.Entries, c)
		}
	}
	for tk, l := range s.ex.links {
		if tk.tenant == q.Tenant && tk.namespace == q.Namespace && wanted(tk.turn) && (len(l.runs) > 0 || len(l.recalls) > 0) {
			r := get(tk.turn)
			r.LinkedRunIDs, r.LinkedRecallIDs = slices.Clone(l.runs), slices.Clone(l.recalls)
		}
	}
	s.es.mu.RUnlock()
	slices.SortFunc(receipts, func(a, b receipt) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, rc := range receipts {
		r := get(rc.turn)
		r.RecallIDs = append(r.RecallIDs, rc.id)
		if rc.runID != "" && !slices.Contains(r.RecallRunIDs, rc.runID) {
			r.RecallRunIDs = append(r.RecallRunIDs, rc.runID)
		}
	}
	rs := s.runTable()
	rs.mu.Lock()
	type opened struct {
		id   string
		turn int
		at   time.Time
	}
	var runsOpened []opened
	for _, m := range rs.runs[q.Tenant] {
		if m.r.Namespace == q.Namespace && wanted(m.r.Turn) {
			runsOpened = append(runsOpened, opened{m.r.ID, m.r.Turn, m.r.CreatedAt})
		}
	}
	rs.mu.Unlock()
	slices.SortFunc(runsOpened, func(a, b opened) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for _, o := range runsOpened {
		r := get(o.turn)
		r.RunIDs = append(r.RunIDs, o.id)
	}

	var numbers []int
	if q.Turns != nil {
		numbers = slices.Clone(q.Turns)
	} else {
		for t := range recs {
			numbers = append(numbers, t)
		}
	}
	slices.SortFunc(numbers, func(a, b int) int { return cmp.Compare(b, a) })
	numbers = slices.Compact(numbers)
	if q.Turns == nil && len(numbers) > q.Limit {
		numbers = numbers[:q.Limit]
	}
	// Facts carry no turn: add those each listed turn last wrote.
	if len(numbers) > 0 {
		s.es.mu.RLock()
		for _, e := range s.es.entries[k] {
			if e.Kind == core.KindFact && live(e, now) && slices.Contains(numbers, e.SourceTurn) {
				c := copyEntry(e)
				c.Embedding = nil
				get(e.SourceTurn).Entries = append(get(e.SourceTurn).Entries, c)
			}
		}
		s.es.mu.RUnlock()
	}
	out := make([]turns.TurnRecord, 0, len(numbers))
	for _, t := range numbers {
		r := get(t)
		slices.SortFunc(r.Entries, func(a, b core.Entry) int {
			if c := cmp.Compare(a.MemoryID, b.MemoryID); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Index, b.Index); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		out = append(out, *r)
	}
	return out, nil
}

// receiptsOf decodes the tenant's receipts of a namespace that keep says to
// keep, newest first, after the position after.
func (s *Store) receiptsOf(tenant, namespace, after string, keep func(recall.RecallResult) bool) ([]recall.RecallResult, error) {
	var at time.Time
	var aid string
	if after != "" {
		var err error
		if at, aid, err = recall.ParseReceiptPosition(after); err != nil {
			return nil, err
		}
	}
	s.es.mu.RLock()
	var out []recall.RecallResult
	for k, b := range s.es.recalls {
		if k[0] != tenant {
			continue
		}
		var r recall.RecallResult
		if err := json.Unmarshal(b, &r); err != nil {
			s.es.mu.RUnlock()
			return nil, err
		}
		if r.Identity.Namespace() != namespace || !keep(r) {
			continue
		}
		created := normalise(r.CreatedAt)
		if after != "" && (created.After(at) || created.Equal(at) && r.RecallID >= aid) {
			continue
		}
		out = append(out, r)
	}
	s.es.mu.RUnlock()
	slices.SortFunc(out, func(a, b recall.RecallResult) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.RecallID, a.RecallID)
	})
	return out, nil
}

// ListRecalls returns a page of a namespace's receipts, newest first.
func (s *Store) ListRecalls(ctx context.Context, q recall.RecallQuery) ([]recall.RecallRecord, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	var linked []string
	if q.Turn > 0 {
		s.es.mu.RLock()
		if l := s.ex.links[turnKey{q.Tenant, q.Namespace, q.Turn}]; l != nil {
			linked = slices.Clone(l.recalls)
		}
		s.es.mu.RUnlock()
	}
	all, err := s.receiptsOf(q.Tenant, q.Namespace, q.After, func(r recall.RecallResult) bool {
		return q.Turn <= 0 || r.Turn == q.Turn || slices.Contains(linked, r.RecallID)
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(all) > q.Limit {
		all = all[:q.Limit]
		last := all[len(all)-1]
		next = recall.ReceiptPosition(normalise(last.CreatedAt), last.RecallID)
	}
	out := make([]recall.RecallRecord, 0, len(all))
	for _, r := range all {
		out = append(out, recall.RecallRecord{ID: r.RecallID, Turn: r.Turn, RunID: r.RunID, CreatedAt: normalise(r.CreatedAt),
			QueryHash: r.QueryHash, Admitted: r.AdmittedIDs()})
	}
	return out, next, nil
}

// RecallsAdmitting returns a page of a namespace's receipts that admitted injectionID.
func (s *Store) RecallsAdmitting(ctx context.Context, tenant, namespace, injectionID, after string, limit int) ([]recall.RecallResult, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	all, err := s.receiptsOf(tenant, namespace, after, func(r recall.RecallResult) bool {
		return slices.Contains(r.AdmittedIDs(), injectionID)
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(all) > limit {
		all = all[:limit]
		last := all[len(all)-1]
		next = recall.ReceiptPosition(normalise(last.CreatedAt), last.RecallID)
	}
	return all, next, nil
}

// TurnsLinking returns the turns of the namespace posted with each of recallIDs.
func (s *Store) TurnsLinking(ctx context.Context, tenant, namespace string, recallIDs []string) (map[string][]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string][]int{}
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	for k, l := range s.ex.links {
		if k.tenant != tenant || k.namespace != namespace {
			continue
		}
		for _, id := range l.recalls {
			if slices.Contains(recallIDs, id) {
				out[id] = append(out[id], k.turn)
			}
		}
	}
	for id := range out {
		slices.Sort(out[id])
	}
	return out, nil
}

// Ablation returns one recorded rerun with its namespace and turn.
func (s *Store) Ablation(ctx context.Context, tenant, id string) (string, int, explain.Ablation, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, explain.Ablation{}, err
	}
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	for k, as := range s.ex.ablations {
		if k.tenant != tenant {
			continue
		}
		for _, a := range as {
			if a.ID == id {
				a.Excluded = slices.Clone(a.Excluded)
				return k.namespace, k.turn, a, nil
			}
		}
	}
	return "", 0, explain.Ablation{}, &core.NotFoundError{What: "ablation", ID: id}
}
