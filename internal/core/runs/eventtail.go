package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// EventTail is the one place footprint decides how much of a run's event
// stream it keeps in memory, and how it tells a reader that it kept less than
// everything. It has no I/O: a store persists it (Snapshot + Dropped) and
// rebuilds it (RestoreEventTail).
//
// It keeps the contract of the agentfootprint eventTail seed:
//
//   - BOUNDED. Past the cap the OLDEST events go; the end of a turn is the
//     part a reader asks about.
//   - HONEST. Dropped (== FirstRetainedIndex) says how many went, so a reader
//     never mistakes the remainder for the whole run. The retained events
//     are always one contiguous suffix of the stream.
//   - A REPEAT HOLDS NO SLOT. Every model call re-announces its context
//     (an announcement event, see IsAnnouncement). An announcement whose
//     payload is identical to one the tail still holds in a slot is a
//     repeat: it is kept, in order, holds no slot, and its Payload is the
//     held announcement's byte slice (one copy). The cap therefore counts
//     DISTINCT events; the whole tail, slots and repeats together, is
//     bounded at RepeatAllowance × cap.
//
// Payload identity is narrowed by the payload's top-level (slot, contentHash)
// and DECIDED on the full payload, so two different pieces are never merged,
// whatever their content hash says. Two payloads are identical when they are
// the same JSON value with members in the same order, as the seed's
// samePayload decides on parsed payloads: same keys in the same order, same
// values, where values compare as JavaScript compares them — the numbers 1
// and 1.0 are one value, the strings "A" and "\u0041" are one value, and
// insignificant whitespace is nothing (see jsonvalue.go). A repeat keeps
// the held announcement's bytes: the first spelling of a value is the one
// stored for all its repeats.
//
// Identity is decided on the payload AS SENT. When what is stored of a
// payload is not the whole of it — its embedding vectors summarised as
// {dims, norm}, or the payload truncated — the event's Identity carries the
// digest of the payload as sent (ValueDigest), and two such payloads are
// identical only when their stored forms are identical AND their digests
// are: two announcements that differ only in their vectors redact to the
// same summary, and are still two pieces. Redaction and truncation are for
// storage and display, never for the decision.
//
// Ownership: Push keeps the caller's Payload and Meta slices; the caller must
// not modify them afterwards. Snapshot and Since return detached read-only
// views (see Snapshot).
//
// An EventTail is NOT safe for concurrent use: the caller serialises appends
// (and reads) per run. All operations are amortised O(1) apart from
// Snapshot/Since, which are O(events returned).
type EventTail struct {
	cap   int
	total int // cap × RepeatAllowance, the memory bound
	// The retained window is buf[start:]. Eviction advances start; the dead
	// prefix is cut in bulk (compaction), which keeps Push amortised O(1).
	buf   []Event
	start int
	// shared: a Snapshot or Since view may alias buf, so the tail must not
	// write to buf[:len(buf)] in place (no clearing on eviction, and the next
	// compaction moves to a fresh array). Appends write past every view's
	// capacity and stay allowed.
	shared  bool
	held    int   // retained events holding a slot
	dropped int64 // evicted events == index of buf[start]
	// Slot-holding announcements, narrowed by a hash of (slot, contentHash).
	// A hash collision only widens the candidates: samePayload decides.
	anns    map[uint64]annBucket
	seed    maphash.Seed
	scratch []byte // key buffer, reused across pushes
}

// Event is one event of a run's stream.
//
// Index is the event's position in the whole stream (0-based); Push assigns
// it. Slot says whether the event holds a slot of the cap (false only for a
// repeat announcement); Push assigns it too, and it is carried in Snapshot so
// that a store can persist it and RestoreEventTail can rebuild the tail
// exactly. Values passed in Index and Slot to Push are ignored.
type Event struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	Index   int64           `json:"index"`
	Slot    bool            `json:"slot,omitempty"`
	// Identity is the digest of the payload as sent (ValueDigest) when
	// Payload is not all of it (embeddings summarised, truncated); nil when
	// Payload is the payload as sent. The tail decides repeats with it.
	Identity *Digest `json:"identity,omitempty"`
	// Received is when the server received the event, by its own clock, in
	// Unix milliseconds (0: unknown); ReceivedAt reads it. The tail does not.
	// (A number, not a time.Time: an Event is copied on every push, and the
	// tail holds up to 100,000 of them.)
	Received int64 `json:"received,omitempty"`
}

// Digest is a SHA-256.
type Digest [32]byte

// ReceivedAt is Received as a time (zero when unknown).
func (e Event) ReceivedAt() time.Time {
	if e.Received == 0 {
		return time.Time{}
	}
	return time.UnixMilli(e.Received).UTC()
}

// ReceivedMs is t in Unix milliseconds, 0 for the zero time: what Event.Received holds.
func ReceivedMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// sameDigest reports whether two optional digests are both absent or equal.
func sameDigest(a, b *Digest) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// TailSnapshot is a detached copy of an EventTail's retained window.
// FirstRetainedIndex always equals Dropped, and Events[i].Index equals
// FirstRetainedIndex+i.
type TailSnapshot struct {
	Events             []Event `json:"events"`
	Dropped            int64   `json:"dropped"`
	FirstRetainedIndex int64   `json:"firstRetainedIndex"`
}

const (
	// DefaultMaxEvents is the cap on slot-holding events when none (or an
	// unusable one) is given.
	DefaultMaxEvents = 10_000
	// RepeatAllowance is how many events — slots and repeats together — the
	// tail keeps per slot of its cap: the memory bound a repeat's envelope
	// still costs (100,000 events at the default cap).
	RepeatAllowance = 10

	// AnnouncementType is the event a context slot re-fires on every model
	// call: the one kind of event that can be a repeat.
	AnnouncementType = "agentfootprint.context.injected"
	// ContextInjectedType is footprint's own name for the same announcement.
	ContextInjectedType = "context.injected"

	// maxCap keeps cap × RepeatAllowance representable.
	maxCap = math.MaxInt / RepeatAllowance
	// compactAt: cut the evicted prefix once it is this long and at least
	// half the buffer.
	compactAt = 1024
)

// IsAnnouncement reports whether an event type is a context-injection
// announcement, the only kind of event that can be a repeat.
func IsAnnouncement(eventType string) bool {
	return eventType == AnnouncementType || eventType == ContextInjectedType
}

// EventTailCap normalises a requested maxEvents into the cap a tail uses:
// floor(maxEvents) when maxEvents is finite and that floor is at least 1,
// otherwise DefaultMaxEvents. Huge values are clamped so that the total bound
// (cap × RepeatAllowance) fits in an int.
//
// The seed only falls back for non-positive values; a value in (0, 1) would
// floor to a cap of 0 — a tail that keeps nothing, which is exactly what the
// fallback exists to prevent — so it means the default here as well.
func EventTailCap(maxEvents float64) int {
	if math.IsNaN(maxEvents) || math.IsInf(maxEvents, 0) || maxEvents < 1 {
		return DefaultMaxEvents
	}
	if maxEvents >= maxCap {
		return maxCap
	}
	return int(math.Floor(maxEvents))
}

// NewEventTail starts an empty tail. maxEvents is the cap on slot-holding
// events, normalised by EventTailCap (0, negative, NaN and ±Inf mean
// DefaultMaxEvents). Integer callers convert: NewEventTail(float64(n)).
func NewEventTail(maxEvents float64) *EventTail {
	c := EventTailCap(maxEvents)
	return &EventTail{cap: c, total: c * RepeatAllowance, anns: make(map[uint64]annBucket), seed: maphash.MakeSeed()}
}

// RestoreEventTail rebuilds a tail from its persisted state: the cap it was
// opened with (normalised as by NewEventTail), its retained events exactly as
// Snapshot returned them (Index and Slot included) and its dropped count. The
// rebuilt tail behaves exactly like the original from then on; repeats share
// the payload bytes of the held announcement again where it is retained.
//
// The state is checked, and an error wrapping ErrInvalid is returned when it
// could not have been produced by a tail: indexes not contiguous from
// dropped, a non-announcement without a slot, or more events than the cap
// allows. Two held announcements that are one value are accepted (a tail
// recorded while identity was decided by spelling holds {"n":1} and
// {"n":1.0} apart). The events slice is copied; the payload bytes are kept,
// not copied.
func RestoreEventTail(maxEvents float64, events []Event, dropped int64) (*EventTail, error) {
	t := NewEventTail(maxEvents)
	if dropped < 0 {
		return nil, fmt.Errorf("%w: event tail: dropped %d is negative", core.ErrInvalid, dropped)
	}
	if len(events) > t.total {
		return nil, fmt.Errorf("%w: event tail: %d events exceed the bound %d (%d × cap %d)",
			core.ErrInvalid, len(events), t.total, RepeatAllowance, t.cap)
	}
	t.buf = make([]Event, len(events), max(len(events), 16))
	copy(t.buf, events)
	t.dropped = dropped
	for i := range t.buf {
		e := &t.buf[i]
		if want := dropped + int64(i); e.Index != want {
			return nil, fmt.Errorf("%w: event tail: event %d has index %d, want %d", core.ErrInvalid, i, e.Index, want)
		}
		announcement := IsAnnouncement(e.Type)
		if !e.Slot {
			if !announcement {
				return nil, fmt.Errorf("%w: event tail: event %d (%q) holds no slot but is not an announcement",
					core.ErrInvalid, e.Index, e.Type)
			}
			// Re-share the held payload's bytes when the original is retained.
			if orig, ok := t.find(e.Payload, e.Identity); ok {
				e.Payload, e.Identity = orig.payload, orig.identity
			}
			continue
		}
		t.held++
		if announcement {
			// Two held announcements may be one value: a tail recorded while identity
			// was decided by spelling held {"n":1} and {"n":1.0} apart. Both stay held;
			// a new announcement repeats the older one, and each goes when evicted.
			t.hold(e.Payload, e.Identity, e.Index)
		}
	}
	if t.held > t.cap {
		return nil, fmt.Errorf("%w: event tail: %d events hold slots, cap is %d", core.ErrInvalid, t.held, t.cap)
	}
	return t, nil
}

// Push appends an event to the stream and returns the index it was given.
// An announcement identical to one the tail holds is stored as a repeat
// (Slot false, Payload shared with the held one); anything else holds a
// slot. Then the oldest events are evicted while more than Cap events hold
// slots or more than RepeatAllowance × Cap events are retained.
func (t *EventTail) Push(e Event) int64 {
	e.Index = t.dropped + int64(len(t.buf)-t.start)
	e.Slot = true
	if IsAnnouncement(e.Type) {
		if orig, ok := t.find(e.Payload, e.Identity); ok {
			e.Payload, e.Identity = orig.payload, orig.identity
			e.Slot = false
		} else {
			t.hold(e.Payload, e.Identity, e.Index)
		}
	}
	if e.Slot {
		t.held++
	}
	t.buf = append(t.buf, e)
	for t.held > t.cap || len(t.buf)-t.start > t.total {
		t.evictOldest()
	}
	if t.start > compactAt && t.start*2 > len(t.buf) {
		t.compact()
	}
	return e.Index
}

// compact cuts the evicted prefix: in place when no view can see the buffer,
// otherwise into a fresh array (the old one stays with the views).
func (t *EventTail) compact() {
	live := t.buf[t.start:]
	if t.shared {
		fresh := make([]Event, len(live), max(2*len(live), 16))
		copy(fresh, live)
		t.buf, t.shared = fresh, false
	} else {
		n := copy(t.buf, live)
		clear(t.buf[n:])
		t.buf = t.buf[:n]
	}
	t.start = 0
}

func (t *EventTail) evictOldest() {
	e := &t.buf[t.start]
	if e.Slot {
		t.held--
		if IsAnnouncement(e.Type) {
			t.forget(e.Payload, e.Index)
		}
	}
	if !t.shared {
		*e = Event{} // release the bytes to the GC now, not at compaction
	}
	t.start++
	t.dropped++
}

// Cap is the cap on slot-holding events.
func (t *EventTail) Cap() int { return t.cap }

// Count is the number of retained events, repeats included.
func (t *EventTail) Count() int { return len(t.buf) - t.start }

// Held is the number of retained events holding a slot (at most Cap).
func (t *EventTail) Held() int { return t.held }

// Dropped is the number of events evicted from the start of the stream.
func (t *EventTail) Dropped() int64 { return t.dropped }

// FirstRetainedIndex is the stream index of the oldest retained event. It
// always equals Dropped: the retained events are one contiguous suffix.
func (t *EventTail) FirstRetainedIndex() int64 { return t.dropped }

// NextIndex is the index the next pushed event will get: the length of the
// whole stream so far.
func (t *EventTail) NextIndex() int64 { return t.dropped + int64(t.Count()) }

// Snapshot returns the retained window, detached: it never changes
// afterwards, however the tail grows, evicts or compacts behind the caller.
// It is O(1): Events is a read-only view that shares storage the tail will
// never write again (capacity-limited, so appending to it copies). The caller
// must not modify its elements in place — clone it (slices.Clone) to edit.
// Events is never nil.
func (t *EventTail) Snapshot() TailSnapshot {
	return TailSnapshot{Events: t.view(t.start, len(t.buf)), Dropped: t.dropped, FirstRetainedIndex: t.dropped}
}

// view returns buf[lo:hi] as a detached read-only view (see Snapshot).
func (t *EventTail) view(lo, hi int) []Event {
	if lo == hi {
		return []Event{}
	}
	t.shared = true
	return t.buf[lo:hi:hi]
}

// Since returns a detached read-only view (see Snapshot) of the retained events whose Index is ≥ index, at most
// limit of them (limit ≤ 0 means no limit), oldest first. gap is true when
// index < FirstRetainedIndex: events the caller asked for were evicted, and
// the result starts at FirstRetainedIndex instead. A negative index is read
// as 0. An index at or past NextIndex yields no events and no gap.
func (t *EventTail) Since(index int64, limit int) (events []Event, gap bool) {
	index = max(index, 0)
	if index < t.dropped {
		gap = true
		index = t.dropped
	}
	from := index - t.dropped
	n := int64(t.Count())
	if from >= n {
		return []Event{}, gap
	}
	k := n - from
	if limit > 0 && int64(limit) < k {
		k = int64(limit)
	}
	lo := t.start + int(from)
	return t.view(lo, lo+int(k)), gap
}

// heldAnnouncement is one slot-holding announcement in the lookup.
type heldAnnouncement struct {
	index    int64
	payload  json.RawMessage
	identity *Digest // the event's Identity: nil when payload is as sent
}

// same reports whether an announcement with payload p and identity id (see
// Event.Identity) is identical to h: the same value stored, and the same
// payload as sent.
func (h heldAnnouncement) same(p json.RawMessage, id *Digest) bool {
	return sameDigest(h.identity, id) && sameValue(h.payload, p)
}

// annBucket holds the announcements sharing a narrowing key; almost always
// one, kept inline so that holding it allocates nothing.
type annBucket struct {
	first heldAnnouncement
	rest  []heldAnnouncement
}

func (t *EventTail) keyOf(p json.RawMessage) uint64 {
	t.scratch = announcementKey(t.scratch[:0], p)
	return maphash.Bytes(t.seed, t.scratch)
}

// find returns the held announcement identical to an announcement of
// payload p and identity id (the oldest, should several be).
func (t *EventTail) find(p json.RawMessage, id *Digest) (heldAnnouncement, bool) {
	b, ok := t.anns[t.keyOf(p)]
	if !ok {
		return heldAnnouncement{}, false
	}
	if b.first.same(p, id) {
		return b.first, true
	}
	for _, h := range b.rest {
		if h.same(p, id) {
			return h, true
		}
	}
	return heldAnnouncement{}, false
}

func (t *EventTail) hold(p json.RawMessage, id *Digest, index int64) {
	k := t.keyOf(p)
	h := heldAnnouncement{index: index, payload: p, identity: id}
	if b, ok := t.anns[k]; ok {
		b.rest = append(b.rest, h)
		t.anns[k] = b
		return
	}
	t.anns[k] = annBucket{first: h}
}

func (t *EventTail) forget(p json.RawMessage, index int64) {
	k := t.keyOf(p)
	b, ok := t.anns[k]
	if !ok {
		return
	}
	switch {
	case b.first.index == index && len(b.rest) == 0:
		delete(t.anns, k)
		return
	case b.first.index == index:
		b.first, b.rest = b.rest[0], b.rest[1:]
	default:
		b.rest = slices.DeleteFunc(b.rest, func(h heldAnnouncement) bool { return h.index == index })
	}
	if len(b.rest) == 0 {
		b.rest = nil
	}
	t.anns[k] = b
}

// announcementKey appends the narrowing key of a payload to dst: the values
// of its top-level "slot" and "contentHash" members (appendValueKey), each
// marked present or absent (an absent field is a key of its own, distinct
// from any value). A payload that is not a well-formed object has both
// absent. Identical payloads (sameValue) always get the same key.
func announcementKey(dst, p []byte) []byte {
	slot, hash, _ := topLevelFields(p)
	dst = appendKeyPart(dst, slot)
	dst = append(dst, 0x1f)
	return appendKeyPart(dst, hash)
}

func appendKeyPart(dst, v []byte) []byte {
	if v == nil {
		return append(dst, 0)
	}
	return appendValueKey(append(dst, 1), v)
}

// topLevelFields finds the raw values of the top-level "slot" and
// "contentHash" keys of a JSON object (the last occurrence wins, as in a
// JSON parser). Keys match by value ("\u0073lot" is "slot"). ok is false, and both
// values nil, when p is not a well-formed object at the top level.
func topLevelFields(p []byte) (slot, hash []byte, ok bool) {
	i := skipSpace(p, 0)
	if i >= len(p) || p[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(p, i+1)
	if i < len(p) && p[i] == '}' {
		return nil, nil, skipSpace(p, i+1) == len(p)
	}
	for {
		if i >= len(p) || p[i] != '"' {
			return nil, nil, false
		}
		kEnd := skipString(p, i)
		if kEnd < 0 {
			return nil, nil, false
		}
		key := p[i+1 : kEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			key = appendUnquoted(nil, p[i:kEnd])
		}
		i = skipSpace(p, kEnd)
		if i >= len(p) || p[i] != ':' {
			return nil, nil, false
		}
		i = skipSpace(p, i+1)
		vEnd := skipValue(p, i)
		if vEnd < 0 {
			return nil, nil, false
		}
		switch string(key) {
		case "slot":
			slot = p[i:vEnd]
		case "contentHash":
			hash = p[i:vEnd]
		}
		i = skipSpace(p, vEnd)
		if i >= len(p) {
			return nil, nil, false
		}
		switch p[i] {
		case ',':
			i = skipSpace(p, i+1)
		case '}':
			if skipSpace(p, i+1) != len(p) {
				return nil, nil, false
			}
			return slot, hash, true
		default:
			return nil, nil, false
		}
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// isStructural: the bytes that delimit tokens on their own.
func isStructural(b byte) bool {
	switch b {
	case '{', '}', '[', ']', ':', ',', '"':
		return true
	}
	return false
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && isSpace(p[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at p[i] == '"',
// or -1 when it is unterminated.
func skipString(p []byte, i int) int {
	for j := i + 1; j < len(p); j++ {
		switch p[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value starting at p[i], or
// -1 when there is none. Containers are skipped by bracket depth (strings
// respected); a scalar runs to the next whitespace or structural byte.
func skipValue(p []byte, i int) int {
	if i >= len(p) {
		return -1
	}
	switch p[i] {
	case '"':
		return skipString(p, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(p); j++ {
			switch p[j] {
			case '"':
				j = skipString(p, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	case '}', ']', ':', ',':
		return -1
	}
	j := i
	for j < len(p) && !isSpace(p[j]) && !isStructural(p[j]) {
		j++
	}
	return j
}
