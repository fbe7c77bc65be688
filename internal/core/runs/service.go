package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Deps is what a Service needs.
type Deps struct {
	Store Store
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Observer is told what each appended batch did (nil: nobody).
	Observer Observer
	// KeyTTL is how long an Idempotency-Key is kept (0: core.DefaultIdempotencyTTL).
	KeyTTL time.Duration
}

// Observer is told what each appended batch did to its run's tail, for
// metrics. It is called on the request's goroutine: it must be cheap and safe
// for concurrent use.
type Observer interface {
	EventsAppended(BatchCounts)
}

type nopObserver struct{}

func (nopObserver) EventsAppended(BatchCounts) {}

// Service records runs: it validates and prepares events (embedding
// digests, truncation) and the store pushes them into the run's tail under
// a per-run lock, in one step with persisting them. Safe for concurrent use.
type Service struct {
	store  Store
	now    func() time.Time
	obs    Observer
	keyTTL time.Duration
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	return &Service{store: d.Store, now: d.Now, obs: d.Observer, keyTTL: d.KeyTTL}
}

// RunParams opens a run.
type RunParams struct {
	ID               string
	ConversationID   string
	Principal        string
	Turn             int
	MaxEvents        *float64
	RecordEmbeddings bool
	StartedAt        time.Time
}

// OpenRun opens a run recording.
func (s *Service) OpenRun(ctx context.Context, tenant string, p RunParams, maxOpen int) (Run, error) {
	r, _, err := s.OpenRunWithKey(ctx, tenant, p, maxOpen, "")
	return r, err
}

// OpenRunWithKey is OpenRun with an Idempotency-Key (none when key is ""): a retry of the same
// open with the same key answers the run as first opened (replayed true) instead of 409
// run-exists, and without a runId opens no second run; the key with another request is
// refused (idempotency-key-reused).
func (s *Service) OpenRunWithKey(ctx context.Context, tenant string, p RunParams, maxOpen int, key string) (_ Run, replayed bool, _ error) {
	request := p // what the key is bound to: the request as sent, before an id is made up
	if p.ID == "" {
		p.ID = newRunID()
	}
	if !validRunID(p.ID) {
		return Run{}, false, &core.ValidationError{Code: core.CodeInvalidField, Path: "runId", Detail: "runId must be 1 to 128 letters, digits and . _ : @ + = -"}
	}
	maxEvents := DefaultMaxEvents
	if p.MaxEvents != nil {
		maxEvents = min(EventTailCap(*p.MaxEvents), MaxRunEvents)
	}
	r := Run{
		Tenant: tenant, ID: p.ID,
		Namespace:      core.Identity{Tenant: tenant, Principal: p.Principal, ConversationID: p.ConversationID}.Namespace(),
		ConversationID: p.ConversationID, Principal: p.Principal, Turn: p.Turn,
		MaxEvents: maxEvents, RecordEmbeddings: p.RecordEmbeddings,
		StartedAt: p.StartedAt.UTC().Truncate(time.Millisecond),
		CreatedAt: s.now().UTC().Truncate(time.Millisecond),
	}
	if p.StartedAt.IsZero() {
		r.StartedAt = time.Time{}
	}
	var admit func(int) error
	if maxOpen > 0 {
		admit = func(open int) error {
			if open >= maxOpen {
				return &core.LimitError{Detail: fmt.Sprintf("This tenant has %d open runs, the most allowed. Finish a run before opening another.", open)}
			}
			return nil
		}
	}
	once, err := core.NewOnce(key, "openRun", request, r, r.CreatedAt, s.keyTTL)
	if err != nil {
		return Run{}, false, err
	}
	if err := s.store.CreateRun(ctx, r, admit, once); err != nil {
		switch {
		case errors.Is(err, ErrRunExists):
			return Run{}, false, &core.ConflictError{Code: core.CodeRunExists, Path: "runId",
				Detail: fmt.Sprintf("A run %q already exists. Open the new run under another id, or leave `runId` out and let the server pick one.", r.ID)}
		case errors.Is(err, core.ErrKeyReused):
			return Run{}, false, core.KeyReused("openRun")
		}
		return Run{}, false, err
	}
	if once != nil && once.Replay != nil {
		var first Run
		if err := json.Unmarshal(once.Replay, &first); err != nil {
			return Run{}, false, fmt.Errorf("decode stored idempotent response: %w", err)
		}
		return first, true, nil
	}
	return r, false, nil
}

// GetRun returns a run's state.
func (s *Service) GetRun(ctx context.Context, tenant, id string) (Run, error) {
	return s.store.GetRun(ctx, tenant, id)
}

// ListRuns lists runs newest first.
func (s *Service) ListRuns(ctx context.Context, q RunQuery) ([]Run, error) {
	return s.store.ListRuns(ctx, q)
}

// RunEvents reads a run and its retained events after an index.
func (s *Service) RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (Run, []RunEvent, error) {
	return s.store.RunEvents(ctx, tenant, id, after, limit)
}

// FinishRun finishes a run.
func (s *Service) FinishRun(ctx context.Context, tenant, id string, complete bool) (Run, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	return s.store.UpdateRun(ctx, tenant, id, func(r *Run) (bool, error) {
		if r.Finished {
			if r.Complete != complete {
				return false, &core.ConflictError{Code: core.CodeRunFinished,
					Detail: fmt.Sprintf("The run %q already finished with complete=%v; it cannot be finished again with complete=%v.", id, r.Complete, complete)}
			}
			return false, nil // finishing again the same way changes nothing
		}
		r.Finished, r.Complete, r.FinishedAt = true, complete, now
		return true, nil
	})
}

// AppendEvents validates a batch, prepares it for the run (embedding
// summaries, truncation) and appends it durably.
func (s *Service) AppendEvents(ctx context.Context, tenant, id string, in []RunEventInput) (AppendResult, error) {
	if len(in) > MaxEventBatch {
		return AppendResult{}, &core.ValidationError{Code: core.CodeInvalidField, Path: "events",
			Detail: fmt.Sprintf("a batch holds at most %d events, this one %d", MaxEventBatch, len(in))}
	}
	for i, e := range in {
		if !ValidEventType(e.Type) {
			return AppendResult{}, &core.ValidationError{Code: core.CodeInvalidField, Path: fmt.Sprintf("events[%d].type", i),
				Detail: "an event type is a letter, then up to 127 letters, digits and _ . : -"}
		}
	}
	var plain, redacted []RunEvent // prepared once per flavour, outside any retry
	receivedAt := s.now().UTC().Truncate(time.Millisecond)
	r, err := s.store.AppendEvents(ctx, tenant, id, func(r Run) ([]RunEvent, error) {
		if r.Finished {
			return nil, &core.ConflictError{Code: core.CodeRunFinished,
				Detail: fmt.Sprintf("The run %q is finished and takes no more events. Open a new run for a new turn.", id)}
		}
		if r.RecordEmbeddings {
			if plain == nil {
				plain = PrepareEvents(in, true, receivedAt)
			}
			return plain, nil
		}
		if redacted == nil {
			redacted = PrepareEvents(in, false, receivedAt)
		}
		return redacted, nil
	})
	if err != nil {
		return AppendResult{}, err
	}
	s.obs.EventsAppended(r.LastBatch)
	return AppendResult{Count: r.EventCount(), Dropped: r.Dropped, FirstRetainedIndex: r.Dropped, TruncatedEvents: r.TruncatedEvents}, nil
}
