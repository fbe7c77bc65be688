package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
)

// Run recordings in memory. The live core.EventTail of each run is the ONLY
// copy of its events here, by design: this store keeps nothing across a
// restart. Truncation records sit beside the tail, keyed by stream index,
// and are pruned as the tail evicts.
type runStore struct {
	mu   sync.Mutex
	runs map[string]map[string]*memRun // tenant → id; made on first use
}

type memRun struct {
	r     runs.Run
	tail  *runs.EventTail
	trunc map[int64]runs.EventTruncation
}

func (s *Store) runTable() *runStore {
	return &s.rs
}

func runNotFound(id string) error { return &core.NotFoundError{What: "run", ID: id} }

func (s *Store) CreateRun(ctx context.Context, r runs.Run, admit func(open int) error, once *core.Once) error {
	return s.inOnce(ctx, r.Tenant, once, func() error { return s.createRun(ctx, r, admit) })
}

func (s *Store) createRun(ctx context.Context, r runs.Run, admit func(open int) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.runs == nil {
		rs.runs = map[string]map[string]*memRun{}
	}
	byID := rs.runs[r.Tenant]
	if _, ok := byID[r.ID]; ok {
		return runs.ErrRunExists
	}
	if admit != nil {
		open := 0
		for _, m := range byID {
			if !m.r.Finished {
				open++
			}
		}
		if err := admit(open); err != nil {
			return err
		}
	}
	if byID == nil {
		byID = map[string]*memRun{}
		rs.runs[r.Tenant] = byID
	}
	r.CreatedAt = normalise(r.CreatedAt)
	r.StartedAt = normaliseOpt(r.StartedAt)
	byID[r.ID] = &memRun{r: r, tail: runs.NewEventTail(float64(r.MaxEvents)), trunc: map[int64]runs.EventTruncation{}}
	return nil
}

func normaliseOpt(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return normalise(t)
}

func (s *Store) GetRun(ctx context.Context, tenant, id string) (runs.Run, error) {
	if err := ctx.Err(); err != nil {
		return runs.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return runs.Run{}, runNotFound(id)
	}
	return m.r, nil
}

func (s *Store) ListRuns(ctx context.Context, q runs.RunQuery) ([]runs.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	var out []runs.Run
	for _, m := range rs.runs[q.Tenant] {
		r := m.r
		if q.Namespace != "" && r.Namespace != q.Namespace {
			continue
		}
		if q.Namespace != "" && q.Turn > 0 && r.Turn != q.Turn {
			continue
		}
		if q.Namespace == "" && q.Principal != "" && r.Principal != q.Principal {
			continue
		}
		if !q.AfterCreated.IsZero() && !runBefore(r, q.AfterCreated, q.AfterID) {
			continue
		}
		out = append(out, r)
	}
	rs.mu.Unlock()
	slices.SortFunc(out, func(a, b runs.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if q.Limit >= 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// runBefore: r sorts after the cursor (created, id) in newest-first order.
func runBefore(r runs.Run, created time.Time, id string) bool {
	if c := r.CreatedAt.Compare(created); c != 0 {
		return c < 0
	}
	return r.ID < id
}

func (s *Store) AppendEvents(ctx context.Context, tenant, id string, prepare func(runs.Run) ([]runs.RunEvent, error)) (runs.Run, error) {
	if err := ctx.Err(); err != nil {
		return runs.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return runs.Run{}, runNotFound(id)
	}
	batch, err := prepare(m.r)
	if err != nil {
		return runs.Run{}, err
	}
	pushed := runs.ApplyAppend(&m.r, m.tail, batch)
	m.r.StartedAt = normaliseOpt(m.r.StartedAt)
	m.r.LastWallClock = normaliseOpt(m.r.LastWallClock)
	m.r.LastReceivedAt = normaliseOpt(m.r.LastReceivedAt)
	for _, e := range pushed {
		if e.Truncated != nil && e.Index >= m.r.Dropped {
			m.trunc[e.Index] = *e.Truncated
		}
	}
	for idx := range m.trunc {
		if idx < m.r.Dropped {
			delete(m.trunc, idx)
		}
	}
	out := m.r
	m.r.LastBatch = runs.BatchCounts{} // only the Run this append returns says what it did
	return out, nil
}

func (s *Store) UpdateRun(ctx context.Context, tenant, id string, change func(*runs.Run) (bool, error)) (runs.Run, error) {
	if err := ctx.Err(); err != nil {
		return runs.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return runs.Run{}, runNotFound(id)
	}
	r := m.r
	changed, err := change(&r)
	if err != nil {
		return runs.Run{}, err
	}
	if changed {
		m.r.Finished, m.r.Complete, m.r.FinishedAt = r.Finished, r.Complete, normaliseOpt(r.FinishedAt)
	}
	return m.r, nil
}

func (s *Store) RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (runs.Run, []runs.RunEvent, error) {
	if err := ctx.Err(); err != nil {
		return runs.Run{}, nil, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return runs.Run{}, nil, runNotFound(id)
	}
	evs, _ := m.tail.Since(after+1, limit)
	out := make([]runs.RunEvent, len(evs))
	for i, e := range evs {
		out[i] = runs.RunEvent{Event: e}
		if tr, ok := m.trunc[e.Index]; ok {
			out[i].Truncated = &tr
		}
	}
	return m.r, out, nil
}

func (s *Store) DeleteFinishedRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var n int64
	for _, byID := range rs.runs {
		for id, m := range byID {
			if m.r.Finished && m.r.FinishedAt.Before(cutoff) {
				delete(byID, id)
				n++
			}
		}
	}
	return n, nil
}
