package memory

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
)

var _ explain.Store = (*Store)(nil)

// explainState holds turn links, ablations and forget tombstones; guarded by
// the entry store's mu.
type explainState struct {
	links     map[turnKey]*turnLink
	ablations map[turnKey][]explain.Ablation
	forgotten map[nsKey]time.Time
}

type turnKey struct {
	tenant, namespace string
	turn              int
}

type turnLink struct{ runs, recalls []string }

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if x != "" && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// LinkTurn adds a run and recall receipts to a turn's links.
func (s *Store) LinkTurn(ctx context.Context, tenant, namespace string, turn int, runID string, recallIDs []string, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	s.linkLocked(tenant, namespace, turn, runID, recallIDs)
	return nil
}

// linkLocked adds links; the caller holds es.mu for writing.
func (s *Store) linkLocked(tenant, namespace string, turn int, runID string, recallIDs []string) {
	if s.ex.links == nil {
		s.ex.links = map[turnKey]*turnLink{}
	}
	k := turnKey{tenant, namespace, turn}
	l := s.ex.links[k]
	if l == nil {
		l = &turnLink{}
		s.ex.links[k] = l
	}
	l.runs = union(l.runs, []string{runID})
	l.recalls = union(l.recalls, recallIDs)
}

// TurnLinks returns a turn's explicit links.
func (s *Store) TurnLinks(ctx context.Context, tenant, namespace string, turn int) ([]string, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	l := s.ex.links[turnKey{tenant, namespace, turn}]
	if l == nil {
		return nil, nil, nil
	}
	return slices.Clone(l.runs), slices.Clone(l.recalls), nil
}

// RecallsFor returns the receipts made for a turn of the namespace, or named by id, oldest
// first.
func (s *Store) RecallsFor(ctx context.Context, tenant, namespace string, turn int, ids []string) ([]recall.RecallResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := s.receiptsOf(tenant, namespace, "", func(r recall.RecallResult) bool {
		return r.Turn == turn || slices.Contains(ids, r.RecallID)
	})
	slices.Reverse(out) // receiptsOf lists newest first
	return out, err
}

// TurnEntries returns a turn's live snapshots and messages in every memory.
func (s *Store) TurnEntries(ctx context.Context, tenant, namespace, conversation string, turn int, now time.Time) ([]core.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now = normalise(now)
	s.es.mu.RLock()
	var out []core.Entry
	for _, e := range s.es.entries[nsKey{tenant, namespace}] {
		if e.Turn == turn && (e.Kind == core.KindSnapshot || e.Kind == core.KindMessage) && live(e, now) &&
			(conversation == "" || e.SourceConversation == conversation) {
			c := copyEntry(e)
			c.Embedding = nil
			out = append(out, c)
		}
	}
	s.es.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.MemoryID != b.MemoryID {
			return a.MemoryID < b.MemoryID
		}
		if a.Kind != b.Kind {
			return a.Kind > b.Kind
		}
		return a.Index < b.Index
	})
	return out, nil
}

// LookupEntry resolves an entry as it is now, expired ones included.
func (s *Store) LookupEntry(ctx context.Context, tenant, namespace, memoryID, id string, now time.Time) (explain.EntryLookup, error) {
	if err := ctx.Err(); err != nil {
		return explain.EntryLookup{}, err
	}
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	k := nsKey{tenant, namespace}
	if e, ok := s.es.entries[k][entryKey{memoryID, id}]; ok {
		c := copyEntry(e)
		c.Embedding = nil
		return explain.EntryLookup{Entry: c, Found: true, Expired: !live(e, normalise(now))}, nil
	}
	_, forgotten := s.ex.forgotten[k]
	return explain.EntryLookup{Forgotten: forgotten}, nil
}

// SaveAblation records a rerun of a turn.
func (s *Store) SaveAblation(ctx context.Context, tenant, namespace string, turn int, a explain.Ablation, once *core.Once) error {
	return s.inOnce(ctx, tenant, once, func() error { return s.saveAblation(ctx, tenant, namespace, turn, a) })
}

func (s *Store) saveAblation(ctx context.Context, tenant, namespace string, turn int, a explain.Ablation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	if s.ex.ablations == nil {
		s.ex.ablations = map[turnKey][]explain.Ablation{}
	}
	a.Excluded = slices.Clone(a.Excluded)
	a.CreatedAt = normalise(a.CreatedAt)
	k := turnKey{tenant, namespace, turn}
	s.ex.ablations[k] = append(s.ex.ablations[k], a)
	return nil
}

// Ablations lists a turn's recorded reruns, oldest first.
func (s *Store) Ablations(ctx context.Context, tenant, namespace string, turn int) ([]explain.Ablation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	var out []explain.Ablation
	for _, a := range s.ex.ablations[turnKey{tenant, namespace, turn}] {
		a.Excluded = slices.Clone(a.Excluded)
		out = append(out, a)
	}
	return out, nil
}

// markForgotten records the tombstone; called by ForgetNamespace with mu held.
func (s *Store) markForgotten(k nsKey) {
	if s.ex.forgotten == nil {
		s.ex.forgotten = map[nsKey]time.Time{}
	}
	s.ex.forgotten[k] = time.Now()
}
