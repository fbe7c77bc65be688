package core

import (
	"context"
	"encoding/json"
	"errors"
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

	// Embedding is nil when the entry has none; EmbeddingModel names the
	// model that produced it.
	Embedding      []float32
	EmbeddingModel string
}

// TurnWrite is one turn's write side, handed to a store to perform in ONE
// transaction serialised per (Tenant, Namespace).
type TurnWrite struct {
	Tenant    string
	Namespace string
	// HostTurn is the caller's turn number, already normalised (≥ 1).
	HostTurn int
	// CountMessageTurns makes live msg-{n}-* ids count toward the highest
	// stored turn, as well as snap-{n} (set when a conversation memory is
	// written by this turn; see the turns issue).
	CountMessageTurns bool
	// CountBeatTurns makes live beat-{n}-* ids count too (set when a
	// narrative memory is written by this turn: its beats are numbered by
	// turn, and a later turn must not collide with them).
	CountBeatTurns bool
	// MemoryIDs are the memories whose stored turns are scanned.
	MemoryIDs []string
	// Now is the transaction's clock for expiry checks and timestamps.
	Now time.Time
	// Build returns the entries to write for the resolved turn. It may be
	// called more than once (a retried transaction), so it must be pure and
	// must not do I/O: embeddings are computed before WriteTurn.
	Build func(turn int) ([]Entry, error)

	// Fingerprints are the (model, dims) each memory's vectors in this
	// turn carry. The store records the first per memory+namespace and
	// returns a *FingerprintMismatch when a later turn differs.
	Fingerprints []Fingerprint

	// Idempotency, when set, is claimed in the same transaction as the
	// write: a committed claim with the same RequestHash replays its stored
	// response instead of writing (TurnOutcome.Replay); another hash is
	// ErrKeyReused; a claim in flight is waited for (and taken over if its
	// write fails). Expired claims are ignored.
	Idempotency *IdempotencyClaim
	// LinkRunID and LinkRecallIDs are the turn's explicit links (its run,
	// the recall receipts it used), recorded in the same transaction.
	LinkRunID     string
	LinkRecallIDs []string

	// Respond renders the response stored with the claim, inside the
	// transaction, from the resolved turn and the written entries.
	Respond func(turn int, written []Entry) ([]byte, error)
}

// ErrKeyReused is returned by WriteTurn when the idempotency key was
// already used with a different request.
var ErrKeyReused = errors.New("idempotency key reused with a different request")

// CodeEntryExists is the conflict code for a write onto a live entry that
// may not be overwritten (anything but a fact).
const CodeEntryExists = "entry-exists"

// Fingerprint identifies the vector space of a memory's embeddings.
type Fingerprint struct {
	MemoryID string
	Model    string
	Dims     int
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

// IdempotencyClaim binds a client's Idempotency-Key to one request.
type IdempotencyClaim struct {
	Key         string
	RequestHash []byte
	ExpiresAt   time.Time
}

// TurnOutcome is what WriteTurn did: either wrote Entries at Turn, or
// found a committed idempotency claim and returns its stored response.
type TurnOutcome struct {
	Turn    int
	Entries []Entry
	Replay  []byte
}

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

// EntryStore persists entries. Implementations are safe for concurrent use
// and translate driver errors as MemoryStore does.
type EntryStore interface {
	// WriteTurn resolves turn = max(w.HostTurn, highestLiveStoredTurn + 1)
	// inside one transaction serialised per namespace, then writes every
	// entry w.Build(turn) returns (upserting facts by id; never
	// overwriting a live snapshot). It returns the turn and the entries as
	// written.
	WriteTurn(ctx context.Context, w TurnWrite) (TurnOutcome, error)
	// ListEntries returns up to q.Limit live entries and the position after
	// the last one ("" when there are no more).
	ListEntries(ctx context.Context, q EntryQuery) ([]Entry, string, error)
	// GetEntry returns one live entry and, when touch is set, bumps its
	// AccessCount and LastAccessedAt. ErrNotFound otherwise.
	GetEntry(ctx context.Context, tenant, namespace, memoryID, id string, touch bool, now time.Time) (Entry, error)
	// PutEntries inserts entries outside a turn (e.g. summaries); an entry
	// whose id is already stored and live is left as it is.
	PutEntries(ctx context.Context, entries []Entry) error
	// ForgetNamespace erases every entry of the namespace in every memory,
	// in one transaction, and returns how many were erased.
	ForgetNamespace(ctx context.Context, tenant, namespace string) (int64, error)
}
