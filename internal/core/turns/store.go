package turns

import (
	"context"
	"errors"
	"time"

	"github.com/footprint/footprint/internal/core"
)

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
	Build func(turn int) ([]core.Entry, error)

	// Fingerprints are the (model, dims) each memory's vectors in this
	// turn carry. The store records the first per memory+namespace and
	// returns a *FingerprintMismatch when a later turn differs.
	Fingerprints []core.Fingerprint

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
	Respond func(turn int, written []core.Entry) ([]byte, error)
}

// ErrKeyReused is returned by WriteTurn when the idempotency key was
// already used with a different request.
var ErrKeyReused = errors.New("idempotency key reused with a different request")

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
	Entries []core.Entry
	Replay  []byte
}

// Store persists entries. Implementations are safe for concurrent use
// and translate driver errors as MemoryStore does.
type Store interface {
	// WriteTurn resolves turn = max(w.HostTurn, highestLiveStoredTurn + 1)
	// inside one transaction serialised per namespace, then writes every
	// entry w.Build(turn) returns (upserting facts by id; never
	// overwriting a live snapshot). It returns the turn and the entries as
	// written.
	WriteTurn(ctx context.Context, w TurnWrite) (TurnOutcome, error)
	// ListEntries returns up to q.Limit live entries and the position after
	// the last one ("" when there are no more).
	ListEntries(ctx context.Context, q core.EntryQuery) ([]core.Entry, string, error)
	// GetEntry returns one live entry and, when touch is set, bumps its
	// AccessCount and LastAccessedAt. ErrNotFound otherwise.
	GetEntry(ctx context.Context, tenant, namespace, memoryID, id string, touch bool, now time.Time) (core.Entry, error)
	// PutEntries inserts entries outside a turn (e.g. summaries); an entry
	// whose id is already stored and live is left as it is.
	PutEntries(ctx context.Context, entries []core.Entry) error
	// ForgetNamespace erases every entry of the namespace in every memory,
	// in one transaction, and returns how many were erased.
	ForgetNamespace(ctx context.Context, tenant, namespace string) (int64, error)
}
