package core

import (
	"cmp"
	"encoding/json"
	"fmt"
	"time"
)

// EntryKind is the kind of a stored entry, visible in its id.
type EntryKind string

// Entry kinds and their id shapes.
const (
	KindMessage  EntryKind = "msg"     // msg-{turn}-{i}
	KindSnapshot EntryKind = "snap"    // snap-{turn}
	KindFact     EntryKind = "fact"    // fact:{key}
	KindBeat     EntryKind = "beat"    // beat-{turn}-{i}
	KindSummary  EntryKind = "summary" // msg-summary-{from}-{to}
	KindDocument EntryKind = "doc"     // document chunks of a corpus
)

// Entry is one stored item of one memory in one namespace.
type Entry struct {
	Tenant    string
	MemoryID  string
	Namespace string
	ID        string
	Kind      EntryKind
	// Turn and Index are parsed from the id at write time (0 when the id
	// carries none), so ordering never compares ids as text.
	Turn  int
	Index int
	// Value and Metadata are JSON documents (Metadata may be nil: {}).
	Value    json.RawMessage
	Metadata json.RawMessage

	Version        int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
	LastAccessedAt time.Time
	AccessCount    int64
	// ExpiresAt is the absolute expiry; zero means never. An expired entry
	// is invisible to every read and scan.
	ExpiresAt time.Time
	Tier      string

	SourceTurn  int
	SourceRunID string
	// SourceConversation is the conversation whose turn wrote the entry, for
	// entries of a principal-scoped memory ("" in a conversation's own
	// namespace, where it is the namespace's conversation).
	SourceConversation string
	// Supersedes is what a fact replaced when it was last restated: the
	// statement and where it came from (nil for a fact stated once, and for
	// every other kind). The store records it as it upserts.
	Supersedes *Superseded

	// Embedding is nil when the entry has none; EmbeddingModel names the
	// model that produced it.
	Embedding      []float32
	EmbeddingModel string
	// Lexical is what lexical ranking keeps of the text the entry is ranked by (nil: none;
	// entries are given it when they are given a vector). Stores persist it; reads may leave
	// it unset.
	Lexical *Lexical
}

// Superseded is the statement a fact replaced: its value and the turn (and,
// in a principal-scoped memory, the conversation) that wrote it.
type Superseded struct {
	Value        json.RawMessage
	Conversation string
	Turn         int
}

// Fingerprint identifies the vector space of a memory's embeddings.
type Fingerprint struct {
	MemoryID string
	// Namespace is where the memory's vectors live when it is not the
	// write's own namespace (a principal-scoped memory); "" otherwise.
	Namespace string
	Model     string
	Dims      int
}

// Against returns the refusal of vectors of space got in a memory whose
// stored vectors are of space f, or nil when they are of one space: vectors
// of different models or dimensions are never compared.
func (f Fingerprint) Against(got Fingerprint) *FingerprintMismatch {
	if f.Model == got.Model && f.Dims == got.Dims {
		return nil
	}
	return &FingerprintMismatch{MemoryID: got.MemoryID, HaveModel: f.Model, HaveDims: f.Dims, GotModel: got.Model, GotDims: got.Dims}
}

// FingerprintMismatch is returned by a store when a turn's vectors differ
// in model or dimensions from those a memory already holds in the
// namespace. Core turns it into an embedder-mismatch problem.
type FingerprintMismatch struct {
	MemoryID            string
	HaveModel, GotModel string
	HaveDims, GotDims   int
}

func (e *FingerprintMismatch) Error() string {
	return fmt.Sprintf("memory %q holds %s@%d vectors, got %s@%d", e.MemoryID, e.HaveModel, e.HaveDims, e.GotModel, e.GotDims)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *FingerprintMismatch) Unwrap() error { return ErrInvalid }

// EntryQuery selects a namespace's entries, newest first (by turn, then
// index, then id), for listing.
type EntryQuery struct {
	Tenant    string
	Namespace string
	MemoryID  string    // "" = every memory
	Kind      EntryKind // "" = every kind
	Tier      string    // "" = every tier
	Now       time.Time
	// After is an opaque position from a previous page ("" = first page).
	After string
	Limit int
	// WithEmbedding loads embeddings (omitted by default: they are large).
	WithEmbedding bool
}

// CompareNewest orders newest first exactly as stores list entries: turn,
// index (none = -1), id, all descending. Rankings break ties of score with it.
func CompareNewest(a, b Entry) int {
	idx := func(e Entry) int {
		if e.Turn == 0 && e.Index == 0 {
			return -1
		}
		return e.Index
	}
	if c := cmp.Compare(b.Turn, a.Turn); c != 0 {
		return c
	}
	if c := cmp.Compare(idx(b), idx(a)); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}
