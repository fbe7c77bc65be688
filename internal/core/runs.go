package core

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Run recordings: a bounded, honest tail of an agent run's events (see
// EventTail), persisted by a RunStore. The service validates and prepares
// events (embedding summaries, truncation) and the store pushes them into
// the run's tail under a per-run lock, in one step with persisting them, so
// that a batch is durable when AppendEvents returns.

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
	// RecordingFormat names the recording envelope.
	RecordingFormat = "footprint.recording.v1"

	CodeRunExists   = "run-exists"
	CodeRunFinished = "run-finished"
	CodeRateLimited = "rate-limited"
)

// ErrTooManyRuns: the tenant has as many open runs as allowed. It is carried
// by a *LimitError.
var ErrTooManyRuns = fmt.Errorf("too many open runs")

// LimitError refuses a request because a per-tenant limit is reached (429).
type LimitError struct{ Detail string }

func (e *LimitError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrTooManyRuns) true.
func (e *LimitError) Unwrap() error { return ErrTooManyRuns }

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
	// StartedAt is the caller's or the first event's meta.wallClockMs.
	StartedAt time.Time
	// LastWallClock is the newest event's meta.wallClockMs (an endedAt for
	// a complete run).
	LastWallClock time.Time
	FinishedAt    time.Time
	// NextIndex is the length of the whole stream; Dropped how many of its
	// oldest events were evicted (== first retained index).
	NextIndex       int64
	Dropped         int64
	TruncatedEvents int64
	CreatedAt       time.Time
}

// EventCount is how many events are retained.
func (r Run) EventCount() int64 { return r.NextIndex - r.Dropped }

// KnownStart is StartedAt unless events were dropped (then the true start is
// unknown and nothing is stated).
func (r Run) KnownStart() time.Time {
	if r.Dropped > 0 {
		return time.Time{}
	}
	return r.StartedAt
}

// EndedAt is only stated for a complete run: the last event's wall clock
// when the agent sent one, else the time it was finished.
func (r Run) EndedAt() time.Time {
	if !r.Complete {
		return time.Time{}
	}
	if !r.LastWallClock.IsZero() {
		return r.LastWallClock
	}
	return r.FinishedAt
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

// RunQuery selects runs to list: newest first, keyset-paged.
type RunQuery struct {
	Tenant    string
	Namespace string // "" = every conversation
	Principal string // only when Namespace is "" (and non-empty)
	// After is the last run of the previous page (zero: from the newest).
	AfterCreated time.Time
	AfterID      string
	Limit        int
}

// RunStore persists run recordings. Appends to one run are serialised by
// the store, whichever process takes them; reads see committed state only.
type RunStore interface {
	// CreateRun stores a new open run; a *ConflictError (CodeRunExists) if
	// the id is taken, a *LimitError if the tenant already has maxOpen
	// unfinished runs (maxOpen ≤ 0: no limit).
	CreateRun(ctx context.Context, r Run, maxOpen int) error
	// GetRun returns the run, or a *NotFoundError{What: "run"}.
	GetRun(ctx context.Context, tenant, id string) (Run, error)
	// ListRuns lists runs newest first.
	ListRuns(ctx context.Context, q RunQuery) ([]Run, error)
	// AppendEvents locks the run, calls prepare with it (it may be called
	// more than once; it must be pure), pushes the prepared events into the
	// run's tail with ApplyAppend and persists the result before returning.
	// A finished run is a *ConflictError (CodeRunFinished).
	AppendEvents(ctx context.Context, tenant, id string, prepare func(Run) ([]RunEvent, error)) (Run, error)
	// FinishRun marks the run finished at now. Finishing a finished run
	// with the same complete returns it unchanged; with the other value it
	// is a *ConflictError (CodeRunFinished).
	FinishRun(ctx context.Context, tenant, id string, complete bool, now time.Time) (Run, error)
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
	for i, e := range batch {
		if r.NextIndex == 0 && i == 0 && r.StartedAt.IsZero() && !e.WallClock.IsZero() {
			r.StartedAt = e.WallClock
		}
		if !e.WallClock.IsZero() {
			r.LastWallClock = e.WallClock
		}
		if e.Truncated != nil {
			r.TruncatedEvents++
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
			}
		}
	}
	r.NextIndex = t.NextIndex()
	r.Dropped = t.Dropped()
	return out
}

// ── the service ─────────────────────────────────────────────────────────────

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

func (s *Service) runs() RunStore { return s.store }

// OpenRun opens a run recording.
func (s *Service) OpenRun(ctx context.Context, tenant string, p RunParams, maxOpen int) (Run, error) {
	if p.ID == "" {
		p.ID = newRunID()
	}
	if !validRunID(p.ID) {
		return Run{}, &ValidationError{Code: CodeInvalidField, Path: "runId", Detail: "runId must be 1 to 128 letters, digits and . _ : @ + = -"}
	}
	maxEvents := DefaultMaxEvents
	if p.MaxEvents != nil {
		maxEvents = min(EventTailCap(*p.MaxEvents), MaxRunEvents)
	}
	r := Run{
		Tenant: tenant, ID: p.ID,
		Namespace:      Identity{Tenant: tenant, Principal: p.Principal, ConversationID: p.ConversationID}.Namespace(),
		ConversationID: p.ConversationID, Principal: p.Principal, Turn: p.Turn,
		MaxEvents: maxEvents, RecordEmbeddings: p.RecordEmbeddings,
		StartedAt: p.StartedAt.UTC().Truncate(time.Millisecond),
		CreatedAt: s.stamp(),
	}
	if p.StartedAt.IsZero() {
		r.StartedAt = time.Time{}
	}
	if err := s.runs().CreateRun(ctx, r, maxOpen); err != nil {
		return Run{}, err
	}
	return r, nil
}

// GetRun returns a run's state.
func (s *Service) GetRun(ctx context.Context, tenant, id string) (Run, error) {
	return s.runs().GetRun(ctx, tenant, id)
}

// ListRuns lists runs newest first.
func (s *Service) ListRuns(ctx context.Context, q RunQuery) ([]Run, error) {
	return s.runs().ListRuns(ctx, q)
}

// RunEvents reads a run and its retained events after an index.
func (s *Service) RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (Run, []RunEvent, error) {
	return s.runs().RunEvents(ctx, tenant, id, after, limit)
}

// FinishRun finishes a run.
func (s *Service) FinishRun(ctx context.Context, tenant, id string, complete bool) (Run, error) {
	return s.runs().FinishRun(ctx, tenant, id, complete, s.stamp())
}

// SweepRuns deletes recordings finished more than retention ago.
func (s *Service) SweepRuns(ctx context.Context, retention time.Duration) (int64, error) {
	return s.runs().DeleteFinishedRuns(ctx, s.now().Add(-retention))
}

// AppendEvents validates a batch, prepares it for the run (embedding
// summaries, truncation) and appends it durably.
func (s *Service) AppendEvents(ctx context.Context, tenant, id string, in []RunEventInput) (AppendResult, error) {
	if len(in) > MaxEventBatch {
		return AppendResult{}, &ValidationError{Code: CodeInvalidField, Path: "events",
			Detail: fmt.Sprintf("a batch holds at most %d events, this one %d", MaxEventBatch, len(in))}
	}
	for i, e := range in {
		if !validEventType(e.Type) {
			return AppendResult{}, &ValidationError{Code: CodeInvalidField, Path: fmt.Sprintf("events[%d].type", i),
				Detail: "an event type is a letter, then up to 127 letters, digits and _ . : -"}
		}
	}
	var plain, redacted []RunEvent // prepared once per flavour, outside any retry
	r, err := s.runs().AppendEvents(ctx, tenant, id, func(r Run) ([]RunEvent, error) {
		if r.RecordEmbeddings {
			if plain == nil {
				plain = PrepareEvents(in, true)
			}
			return plain, nil
		}
		if redacted == nil {
			redacted = PrepareEvents(in, false)
		}
		return redacted, nil
	})
	if err != nil {
		return AppendResult{}, err
	}
	return AppendResult{Count: r.EventCount(), Dropped: r.Dropped, FirstRetainedIndex: r.Dropped, TruncatedEvents: r.TruncatedEvents}, nil
}

// PrepareEvents turns input events into stored ones: embedding arrays
// summarised (unless recordEmbeddings), payloads over MaxEventPayloadBytes
// truncated, meta.wallClockMs read. It does no I/O.
func PrepareEvents(in []RunEventInput, recordEmbeddings bool) []RunEvent {
	out := make([]RunEvent, len(in))
	for i, e := range in {
		p := e.Payload
		if len(bytes.TrimSpace(p)) == 0 {
			p = json.RawMessage("null")
		}
		if !recordEmbeddings {
			p = RedactEmbeddings(p)
		}
		ev := RunEvent{Event: Event{Type: e.Type, Payload: p}}
		if len(p) > MaxEventPayloadBytes {
			ev.Payload, ev.Truncated = TruncatePayload(p, MaxEventPayloadBytes)
		}
		if len(e.Meta) > 0 && !bytes.Equal(bytes.TrimSpace(e.Meta), []byte("null")) {
			ev.Meta = e.Meta
			ev.WallClock = wallClockOf(e.Meta)
		}
		out[i] = ev
	}
	return out
}

func wallClockOf(meta []byte) time.Time {
	if !bytes.Contains(meta, []byte(`"wallClockMs"`)) {
		return time.Time{}
	}
	var m struct {
		WallClockMs *float64 `json:"wallClockMs"`
	}
	if json.Unmarshal(meta, &m) != nil || m.WallClockMs == nil {
		return time.Time{}
	}
	ms := *m.WallClockMs
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms > 8.64e15 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// TruncatePayload keeps an over-limit payload as a JSON string holding the
// start of its JSON text (at most limit bytes encoded, cut on a UTF-8
// boundary), with the original's length and SHA-256.
func TruncatePayload(p []byte, limit int) (json.RawMessage, *EventTruncation) {
	sum := sha256.Sum256(p)
	tr := &EventTruncation{OriginalBytes: int64(len(p)), SHA256: hex.EncodeToString(sum[:])}
	n := min(len(p), limit-2)
	for {
		for n > 0 && !utf8.RuneStart(p[n]) && n < len(p) {
			n--
		}
		s := encodeString(p[:n])
		if len(s) <= limit || n == 0 {
			return s, tr
		}
		// Escapes made it longer: shrink by the overshoot and retry.
		n -= len(s) - limit
		if n < 0 {
			n = 0
		}
	}
}

func encodeString(b []byte) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(b)) // a string always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// RedactEmbeddings replaces numeric arrays under "embedding"/"embeddings"
// keys, at any depth, with {"dims":n,"norm":x} (an array of numeric arrays
// under "embeddings" becomes an array of those). Everything else keeps its
// tokens and key order; insignificant whitespace is dropped only when a
// replacement is made. A payload without such a key is returned as is.
func RedactEmbeddings(p json.RawMessage) json.RawMessage {
	if !bytes.Contains(p, []byte(`"embedding`)) {
		return p
	}
	trimmed := bytes.TrimSpace(p)
	out, changed, ok := redactValue(make([]byte, 0, len(trimmed)/2), trimmed)
	if !ok || !changed {
		return p
	}
	return out
}

// redactValue appends v (one complete JSON value, trimmed) to dst with
// embeddings summarised.
func redactValue(dst, v []byte) ([]byte, bool, bool) {
	if len(v) == 0 {
		return dst, false, false
	}
	switch v[0] {
	case '{':
		changed := false
		dst = append(dst, '{')
		i := skipSpace(v, 1)
		if i < len(v) && v[i] == '}' {
			return append(dst, '}'), false, true
		}
		for first := true; ; first = false {
			if i >= len(v) || v[i] != '"' {
				return dst, false, false
			}
			kEnd := skipString(v, i)
			if kEnd < 0 {
				return dst, false, false
			}
			key := v[i:kEnd]
			i = skipSpace(v, kEnd)
			if i >= len(v) || v[i] != ':' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
			vEnd := skipValue(v, i)
			if vEnd < 0 {
				return dst, false, false
			}
			val := v[i:vEnd]
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, key...)
			dst = append(dst, ':')
			k := string(key)
			if sum, ok := summariseKey(k, val); ok {
				dst = append(dst, sum...)
				changed = true
			} else {
				var c, ok bool
				dst, c, ok = redactValue(dst, val)
				if !ok {
					return dst, false, false
				}
				changed = changed || c
			}
			i = skipSpace(v, vEnd)
			if i >= len(v) {
				return dst, false, false
			}
			if v[i] == '}' {
				return append(dst, '}'), changed, true
			}
			if v[i] != ',' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
		}
	case '[':
		changed := false
		dst = append(dst, '[')
		i := skipSpace(v, 1)
		if i < len(v) && v[i] == ']' {
			return append(dst, ']'), false, true
		}
		for first := true; ; first = false {
			end := skipValue(v, i)
			if end < 0 {
				return dst, false, false
			}
			if !first {
				dst = append(dst, ',')
			}
			var c, ok bool
			dst, c, ok = redactValue(dst, v[i:end])
			if !ok {
				return dst, false, false
			}
			changed = changed || c
			i = skipSpace(v, end)
			if i >= len(v) {
				return dst, false, false
			}
			if v[i] == ']' {
				return append(dst, ']'), changed, true
			}
			if v[i] != ',' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
		}
	}
	return append(dst, v...), false, true
}

func summariseKey(key string, val []byte) ([]byte, bool) {
	if key != `"embedding"` && key != `"embeddings"` {
		return nil, false
	}
	return summarise(val, key == `"embeddings"`)
}

// summarise returns {"dims":n,"norm":x} for a non-empty array of numbers,
// or (nested) an array of those for a non-empty array of such arrays.
func summarise(v []byte, nested bool) ([]byte, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var dims int
	var sq float64
	var parts [][]byte
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return nil, false
	}
	for {
		end := skipValue(v, i)
		if end < 0 {
			return nil, false
		}
		tok := v[i:end]
		if tok[0] == '[' && nested {
			s, ok := summarise(tok, false)
			if !ok {
				return nil, false
			}
			parts = append(parts, s)
		} else {
			if nested && len(parts) > 0 {
				return nil, false
			}
			f, err := strconv.ParseFloat(string(tok), 64)
			if err != nil || tok[0] == '"' {
				return nil, false
			}
			dims++
			sq += f * f
		}
		i = skipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		if v[i] == ']' {
			break
		}
		if v[i] != ',' {
			return nil, false
		}
		i = skipSpace(v, i+1)
	}
	if len(parts) > 0 {
		if dims > 0 {
			return nil, false
		}
		out := []byte{'['}
		for j, p := range parts {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, p...)
		}
		return append(out, ']'), true
	}
	norm := math.Round(math.Sqrt(sq)*1e6) / 1e6
	out := []byte(`{"dims":`)
	out = strconv.AppendInt(out, int64(dims), 10)
	out = append(out, `,"norm":`...)
	out = strconv.AppendFloat(out, norm, 'g', -1, 64)
	return append(out, '}'), true
}

func validEventType(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 {
			if !letter {
				return false
			}
			continue
		}
		if !letter && (c < '0' || c > '9') && c != '_' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func validRunID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '+', c == '=', c == '-':
		default:
			return false
		}
	}
	return true
}

func newRunID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return "run-" + recallIDEncoding.EncodeToString(b[:])
}
