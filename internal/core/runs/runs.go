package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Run-recording limits. They are part of the API contract (api/openapi.yaml).
const (
	// MaxRunEvents clamps a run's maxEvents.
	MaxRunEvents = 1_000_000
	// MaxEventBatch is the most events one append may carry.
	MaxEventBatch = 1000
	// MaxEventPayloadBytes is the largest payload kept whole; a larger one is
	// kept truncated (EventTruncation).
	MaxEventPayloadBytes = 64 << 10
	// DefaultMaxOpenRuns is the default per-tenant cap on unfinished runs.
	DefaultMaxOpenRuns = 1000
	// MaxEventTypeLength is the longest event type, in bytes; EventTypePattern
	// is the pattern every event type matches (ValidEventType implements it).
	MaxEventTypeLength = 128
	EventTypePattern   = `^[A-Za-z][A-Za-z0-9_.:-]{0,127}$`
	// RecordingFormat names the recording envelope.
	RecordingFormat = "footprint.recording.v1"
)

// Run is a run recording's state. Zero times are unknown (absent keys).
type Run struct {
	Tenant           string
	ID               string
	Namespace        string // Identity{Tenant, Principal, ConversationID}.Namespace()
	ConversationID   string
	Principal        string
	Turn             int
	MaxEvents        int
	RecordEmbeddings bool
	Finished         bool
	Complete         bool
	// StartedAt is the caller's or the first event's meta.wallClockMs: the
	// CLIENT's clock, as reported.
	StartedAt time.Time
	// LastWallClock is the newest event's meta.wallClockMs (the client's
	// clock: its end, for a complete run).
	LastWallClock time.Time
	// LastReceivedAt is when the server received the newest event, and
	// FinishedAt when it finished the run: the SERVER's clock, as CreatedAt.
	LastReceivedAt time.Time
	FinishedAt     time.Time
	// NextIndex is the length of the whole stream; Dropped how many of its
	// oldest events were evicted (== first retained index).
	NextIndex       int64
	Dropped         int64
	TruncatedEvents int64
	CreatedAt       time.Time
	// LastBatch counts what the batch of the AppendEvents that returned this
	// Run did (ApplyAppend sets it, for metrics); it is not stored, and is
	// zero on a Run read any other way.
	LastBatch BatchCounts
}

// BatchCounts is what one appended batch did to a run's tail.
type BatchCounts struct {
	Appended  int64 // events in the batch
	Repeats   int64 // announcements identical to one held, kept without a slot (of the batch's events still retained)
	Dropped   int64 // oldest events evicted to make room
	Truncated int64 // events whose payload was kept truncated
}

// EventCount is how many events are retained.
func (r Run) EventCount() int64 { return r.NextIndex - r.Dropped }

// KnownStart is StartedAt (the client's clock) unless events were dropped:
// then what the client reported as the start is not stated, as the seed's
// recording does not state a start for a stream it lost the head of.
func (r Run) KnownStart() time.Time {
	if r.Dropped > 0 {
		return time.Time{}
	}
	return r.StartedAt
}

// EndedAt is only stated for a complete run: when the server finished it.
// The client's own end (the last event's meta.wallClockMs) is LastWallClock,
// reported as the client's and never as the run's end.
func (r Run) EndedAt() time.Time {
	if !r.Complete {
		return time.Time{}
	}
	return r.FinishedAt
}

// ClocksDisagree reports whether the client's times, read beside the
// server's, contradict the run's order: the client's newest event before
// its own start, or before the server opened the run, or the client's start
// after the server finished it. Either clock may be the wrong one; the
// server's own times (CreatedAt, LastReceivedAt, FinishedAt) are always in
// order, and the client's are reported as the client said them.
func (r Run) ClocksDisagree() bool {
	start, last := r.KnownStart(), r.LastWallClock
	switch {
	case !last.IsZero() && !start.IsZero() && last.Before(start):
		return true
	case !last.IsZero() && !r.CreatedAt.IsZero() && last.Before(r.CreatedAt.Truncate(time.Millisecond)):
		return true
	case !start.IsZero() && !r.FinishedAt.IsZero() && start.After(r.FinishedAt):
		return true
	}
	return false
}

// Revision tags the run's recording as it is now, for HTTP validators (ETag,
// If-None-Match): it changes with every append (NextIndex), eviction
// (Dropped) and finish, and differs for a run re-created under its id
// (CreatedAt). Opaque, 16 hex digits.
func (r Run) Revision() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "run\x00%s\x00%d\x00%d\x00%d\x00%d\x00%t\x00%t\x00%d",
		r.ID, r.CreatedAt.UnixMicro(), r.NextIndex, r.Dropped, r.TruncatedEvents, r.Finished, r.Complete, r.FinishedAt.UnixMicro()))
	return hex.EncodeToString(sum[:8])
}

// EventTruncation records the payload an event had before it was truncated.
type EventTruncation struct {
	OriginalBytes int64
	SHA256        string
}

// RunEvent is one event of a run as stored: the tail's Event plus what the
// tail does not track.
type RunEvent struct {
	Event
	Truncated *EventTruncation
	// WallClock is meta.wallClockMs (input only; zero when absent).
	WallClock time.Time
}

// RunEventInput is one event as a caller sends it.
type RunEventInput struct {
	Type    string
	Payload json.RawMessage // nil means null
	Meta    json.RawMessage // a JSON object or nil
}

// AppendResult is a run's tail after a batch.
type AppendResult struct {
	Count              int64
	Dropped            int64
	FirstRetainedIndex int64
	TruncatedEvents    int64
}

// ErrRunExists is what a Store returns when a run's id is taken; the
// service turns it into the refusal a client reads.
var ErrRunExists = fmt.Errorf("run id taken: %w", core.ErrConflict)

// RunQuery selects runs to list: newest first, keyset-paged.
type RunQuery struct {
	Tenant    string
	Namespace string // "" = every conversation
	Principal string // only when Namespace is "" (and non-empty)
	// Turn, with Namespace, keeps only the runs opened for that turn of the conversation
	// (0: every run). Explain reads a turn's runs this way, exactly, however many later runs
	// the conversation has.
	Turn int
	// After is the last run of the previous page (zero: from the newest).
	AfterCreated time.Time
	AfterID      string
	Limit        int
}

// Store persists run recordings. Appends to one run are serialised by
// the store, whichever process takes them; reads see committed state only.
type Store interface {
	// CreateRun stores a new open run. When admit is set, it is called with
	// the tenant's number of unfinished runs, counted under a per-tenant lock
	// (so concurrent opens from any process see each other), and its error
	// refuses the run. A taken id is ErrRunExists. With once, the open is
	// idempotent (see core.Once): a replay opens nothing and sets
	// once.Replay; a key used by another request is core.ErrKeyReused.
	CreateRun(ctx context.Context, r Run, admit func(open int) error, once *core.Once) error
	// GetRun returns the run, or a *core.NotFoundError{What: "run"}.
	GetRun(ctx context.Context, tenant, id string) (Run, error)
	// ListRuns lists runs newest first.
	ListRuns(ctx context.Context, q RunQuery) ([]Run, error)
	// AppendEvents locks the run, calls prepare with it (it may be called
	// more than once; it must be pure, and its error refuses the batch),
	// pushes the prepared events into the run's tail with ApplyAppend and
	// persists the result before returning.
	AppendEvents(ctx context.Context, tenant, id string, prepare func(Run) ([]RunEvent, error)) (Run, error)
	// UpdateRun locks the run, calls change with it and, when change
	// reports a change, stores the run's Finished, Complete and FinishedAt as
	// change left them. change's error is returned unchanged, with nothing
	// stored.
	UpdateRun(ctx context.Context, tenant, id string, change func(*Run) (bool, error)) (Run, error)
	// RunEvents returns the run and its retained events with index > after,
	// oldest first, at most limit (≤ 0: all), read consistently.
	RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (Run, []RunEvent, error)
	// DeleteFinishedRuns deletes runs finished before cutoff with their
	// events, returning how many runs went.
	DeleteFinishedRuns(ctx context.Context, cutoff time.Time) (int64, error)
}

// ApplyAppend pushes a prepared batch into t (the run's tail, in the state r
// describes) and updates r's counters. It returns the pushed events with
// Index, Slot and shared repeat payloads filled in. Both stores use it, so
// they agree on every counter.
func ApplyAppend(r *Run, t *EventTail, batch []RunEvent) []RunEvent {
	out := make([]RunEvent, len(batch))
	r.LastBatch = BatchCounts{Appended: int64(len(batch))}
	dropped := r.Dropped
	for i, e := range batch {
		if r.NextIndex == 0 && i == 0 && r.StartedAt.IsZero() && !e.WallClock.IsZero() {
			r.StartedAt = e.WallClock
		}
		if !e.WallClock.IsZero() {
			r.LastWallClock = e.WallClock
		}
		if e.Received != 0 {
			r.LastReceivedAt = e.ReceivedAt()
		}
		if e.Truncated != nil {
			r.TruncatedEvents++
			r.LastBatch.Truncated++
		}
		idx := t.Push(e.Event)
		e.Index = idx
		out[i] = e
	}
	// Slot and shared payloads as the tail decided them.
	if n := len(out); n > 0 {
		first := out[0].Index
		if evs, _ := t.Since(first, 0); len(evs) > 0 {
			off := int(evs[0].Index - first)
			for j := range evs {
				out[off+j].Event = evs[j]
				if !evs[j].Slot {
					r.LastBatch.Repeats++
				}
			}
		}
	}
	r.NextIndex = t.NextIndex()
	r.Dropped = t.Dropped()
	r.LastBatch.Dropped = r.Dropped - dropped
	return out
}
