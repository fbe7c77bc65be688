package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Run recordings in memory. The live core.EventTail of each run is the ONLY
// copy of its events here, by design: this store keeps nothing across a
// restart. Truncation records sit beside the tail, keyed by stream index,
// and are pruned as the tail evicts.
type runStore struct {
	mu        sync.Mutex
	runs      map[string]map[string]*memRun // tenant → id; made on first use
	retention time.Duration                 // 0: DefaultRunRetention; < 0: keep forever
}

// DefaultRunRetention is how long a finished recording is kept before Sweep
// deletes it, unless SetRunRetention says otherwise.
const DefaultRunRetention = 30 * 24 * time.Hour

// SetRunRetention sets how long finished recordings are kept (< 0: forever).
func (s *Store) SetRunRetention(d time.Duration) {
	s.rs.mu.Lock()
	s.rs.retention = d
	s.rs.mu.Unlock()
}

// sweepRuns deletes recordings finished longer than the retention ago.
func (s *Store) sweepRuns(ctx context.Context, now time.Time) (int64, error) {
	s.rs.mu.Lock()
	d := s.rs.retention
	s.rs.mu.Unlock()
	if d < 0 {
		return 0, nil
	}
	if d == 0 {
		d = DefaultRunRetention
	}
	return s.DeleteFinishedRuns(ctx, now.Add(-d))
}

type memRun struct {
	r     core.Run
	tail  *core.EventTail
	trunc map[int64]core.EventTruncation
}

func (s *Store) runTable() *runStore {
	return &s.rs
}

func runNotFound(id string) error { return &core.NotFoundError{What: "run", ID: id} }

func (s *Store) CreateRun(ctx context.Context, r core.Run, maxOpen int) error {
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
		return &core.ConflictError{Code: core.CodeRunExists, Detail: fmt.Sprintf("A run %q already exists. Open the new run under another id, or leave `runId` out and let the server pick one.", r.ID)}
	}
	if maxOpen > 0 {
		open := 0
		for _, m := range byID {
			if !m.r.Finished {
				open++
			}
		}
		if open >= maxOpen {
			return &core.LimitError{Detail: fmt.Sprintf("This tenant has %d open runs, the most allowed. Finish a run before opening another.", open)}
		}
	}
	if byID == nil {
		byID = map[string]*memRun{}
		rs.runs[r.Tenant] = byID
	}
	r.CreatedAt = normalise(r.CreatedAt)
	r.StartedAt = normaliseOpt(r.StartedAt)
	byID[r.ID] = &memRun{r: r, tail: core.NewEventTail(float64(r.MaxEvents)), trunc: map[int64]core.EventTruncation{}}
	return nil
}

func normaliseOpt(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return normalise(t)
}

func (s *Store) GetRun(ctx context.Context, tenant, id string) (core.Run, error) {
	if err := ctx.Err(); err != nil {
		return core.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return core.Run{}, runNotFound(id)
	}
	return m.r, nil
}

func (s *Store) ListRuns(ctx context.Context, q core.RunQuery) ([]core.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	var out []core.Run
	for _, m := range rs.runs[q.Tenant] {
		r := m.r
		if q.Namespace != "" && r.Namespace != q.Namespace {
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
	slices.SortFunc(out, func(a, b core.Run) int {
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
func runBefore(r core.Run, created time.Time, id string) bool {
	if c := r.CreatedAt.Compare(created); c != 0 {
		return c < 0
	}
	return r.ID < id
}

func (s *Store) AppendEvents(ctx context.Context, tenant, id string, prepare func(core.Run) ([]core.RunEvent, error)) (core.Run, error) {
	if err := ctx.Err(); err != nil {
		return core.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return core.Run{}, runNotFound(id)
	}
	if m.r.Finished {
		return core.Run{}, finishedErr(m.r)
	}
	batch, err := prepare(m.r)
	if err != nil {
		return core.Run{}, err
	}
	pushed := core.ApplyAppend(&m.r, m.tail, batch)
	m.r.StartedAt = normaliseOpt(m.r.StartedAt)
	m.r.LastWallClock = normaliseOpt(m.r.LastWallClock)
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
	return m.r, nil
}

func finishedErr(r core.Run) error {
	return &core.ConflictError{Code: core.CodeRunFinished,
		Detail: fmt.Sprintf("The run %q is finished and takes no more events. Open a new run for a new turn.", r.ID)}
}

func (s *Store) FinishRun(ctx context.Context, tenant, id string, complete bool, now time.Time) (core.Run, error) {
	if err := ctx.Err(); err != nil {
		return core.Run{}, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return core.Run{}, runNotFound(id)
	}
	if m.r.Finished {
		if m.r.Complete == complete {
			return m.r, nil
		}
		return core.Run{}, &core.ConflictError{Code: core.CodeRunFinished,
			Detail: fmt.Sprintf("The run %q already finished with complete=%v; it cannot be finished again with complete=%v.", id, m.r.Complete, complete)}
	}
	m.r.Finished, m.r.Complete, m.r.FinishedAt = true, complete, normalise(now)
	return m.r, nil
}

func (s *Store) RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (core.Run, []core.RunEvent, error) {
	if err := ctx.Err(); err != nil {
		return core.Run{}, nil, err
	}
	rs := s.runTable()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	m, ok := rs.runs[tenant][id]
	if !ok {
		return core.Run{}, nil, runNotFound(id)
	}
	evs, _ := m.tail.Since(after+1, limit)
	out := make([]core.RunEvent, len(evs))
	for i, e := range evs {
		out[i] = core.RunEvent{Event: e}
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
