package turns

import (
	"context"
	"slices"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// TurnWrite is one turn's write side, handed to a store to perform in ONE
// transaction serialised per (Tenant, Namespace). The store locks the
// namespace, reads the facts Decide needs (the highest live turn in Scope,
// the vector fingerprints stored for FingerprintMemories), calls Decide and
// writes what it decided: the store persists, the domain decides.
type TurnWrite struct {
	Tenant    string
	Namespace string
	// Scope says which stored entries count toward the highest live turn.
	Scope TurnScope
	// FingerprintMemories are the memories whose stored vector fingerprints
	// (in Namespace) Decide is given.
	FingerprintMemories []string
	// PrincipalNamespace, when set, is the principal's namespace, where the
	// turn's principal-scoped memories write (their entries carry it). The
	// store locks it after Namespace — every writer takes the two in that
	// order — so writes to a principal's memories serialise as a
	// conversation's do. PrincipalFingerprintMemories are the memories whose
	// fingerprints Decide is given from there.
	PrincipalNamespace           string
	PrincipalFingerprintMemories []string
	// Now is the transaction's clock for expiry checks and timestamps.
	Now time.Time
	// Decide returns the turn number and the entries to write from what the
	// store read under the lock. It may be called more than once (a retried
	// transaction, a stale prediction), so it must be pure and do no I/O:
	// vectors and extractions are computed before WriteTurn. Its error is
	// returned by WriteTurn unchanged, with nothing written.
	Decide func(TurnFacts) (TurnDecision, error)

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

// TurnScope is what counts toward a namespace's highest live turn: the live
// entries of MemoryIDs whose kind is one of Kinds.
type TurnScope struct {
	MemoryIDs []string
	Kinds     []core.EntryKind
	// Shared, when set, also counts the conversation's turns kept in its
	// principal's namespace (by principal-scoped memories), so that turn
	// numbers stay the conversation's own wherever its entries live.
	Shared *SharedScope
}

// SharedScope is what counts toward a conversation's highest turn in its
// principal's namespace: the live entries of MemoryIDs whose kind is one of
// Kinds and that the conversation wrote. They are written only by the
// conversation's own turns, which hold its lock, so reading them needs no
// other.
type SharedScope struct {
	Namespace    string
	Conversation string
	MemoryIDs    []string
	Kinds        []core.EntryKind
}

// Counts reports whether e, stored in the write's own namespace, counts
// toward the highest live turn at now.
func (sc TurnScope) Counts(e core.Entry, now time.Time) bool {
	return e.Turn > 0 && slices.Contains(sc.Kinds, e.Kind) && slices.Contains(sc.MemoryIDs, e.MemoryID) &&
		(e.ExpiresAt.IsZero() || e.ExpiresAt.After(now))
}

// CountsShared reports whether e, stored in the principal's namespace, counts
// toward the conversation's highest live turn at now.
func (sc TurnScope) CountsShared(e core.Entry, now time.Time) bool {
	sh := sc.Shared
	return sh != nil && e.Turn > 0 && e.SourceConversation == sh.Conversation && slices.Contains(sh.Kinds, e.Kind) &&
		slices.Contains(sh.MemoryIDs, e.MemoryID) && (e.ExpiresAt.IsZero() || e.ExpiresAt.After(now))
}

// HighestAfter is the highest live turn at now once written is stored on top
// of a namespace whose highest live turn was before.
func (sc TurnScope) HighestAfter(before int, written []core.Entry, now time.Time) int {
	highest := before
	for _, e := range written {
		if e.Turn > highest && (sc.Counts(e, now) || sc.Shared != nil && e.Namespace == sc.Shared.Namespace && sc.CountsShared(e, now)) {
			highest = e.Turn
		}
	}
	return highest
}

// TurnFacts are what a store read under the namespace lock for Decide.
type TurnFacts struct {
	// Highest is the highest live stored turn in the write's Scope (0: none).
	Highest int
	// Fingerprints are the vector spaces stored for the write's
	// FingerprintMemories, by memory id (absent: no vector stored yet).
	Fingerprints map[string]core.Fingerprint
}

// TurnDecision is what Decide decided: the turn, the entries to write for it
// and the fingerprints to record (the first vectors of a memory in the
// namespace).
type TurnDecision struct {
	Turn            int
	Entries         []core.Entry
	NewFingerprints []core.Fingerprint
}

// Decider is the turn rule of the seed, as a TurnWrite's Decide:
//
//	turn = max(hostTurn, highest live stored turn + 1)
//
// then fingerprints are checked against the stored ones (a *core.FingerprintMismatch
// when a memory already holds vectors of another model or dimensions; the new ones are
// recorded) and build makes the turn's entries.
func Decider(hostTurn int, fingerprints []core.Fingerprint, build func(turn int) ([]core.Entry, error)) func(TurnFacts) (TurnDecision, error) {
	return func(f TurnFacts) (TurnDecision, error) {
		var fresh []core.Fingerprint
		for _, fp := range fingerprints {
			have, ok := f.Fingerprints[fp.MemoryID]
			if !ok {
				fresh = append(fresh, fp)
			} else if mm := have.Against(fp); mm != nil {
				return TurnDecision{}, mm
			}
		}
		turn := max(hostTurn, f.Highest+1)
		entries, err := build(turn)
		if err != nil {
			return TurnDecision{}, err
		}
		return TurnDecision{Turn: turn, Entries: entries, NewFingerprints: fresh}, nil
	}
}

// EntryInTheWay is what a store returns when an entry a turn writes would
// overwrite a live one that may not be overwritten (anything but a fact).
// MemoryID and EntryID say which, when the store knows. It unwraps to
// core.ErrConflict.
type EntryInTheWay struct {
	MemoryID, EntryID string
}

func (e *EntryInTheWay) Error() string {
	if e.EntryID == "" {
		return "an entry of the turn is already stored and live"
	}
	return "entry " + e.EntryID + " of memory " + e.MemoryID + " is already stored and live"
}

// Unwrap makes errors.Is(err, core.ErrConflict) true.
func (e *EntryInTheWay) Unwrap() error { return core.ErrConflict }

// ErrKeyReused is returned by WriteTurn when the idempotency key was
// already used with a different request (core's, shared by every create).
var ErrKeyReused = core.ErrKeyReused

// IdempotencyClaim binds a client's Idempotency-Key to one request.
type IdempotencyClaim = core.IdempotencyClaim

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
	// WriteTurn locks the namespace, reads the facts w.Decide needs and
	// writes what it decides, in one transaction: facts upsert by id; any
	// other entry that would overwrite a live one fails the whole write with
	// an *EntryInTheWay. It returns the turn and the entries as written.
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
	// ForgetPrincipal erases, in one transaction, every entry of the
	// principal's namespace (principalNS) and of every conversation
	// namespace starting with prefix (the principal's conversations), their
	// fingerprints, and the audit records kept of them — recall receipts,
	// run recordings, turn links, ablations and the tombstones of earlier
	// forgets — and says how much went.
	ForgetPrincipal(ctx context.Context, tenant, principal, principalNS, prefix string) (ForgetReport, error)
	// CountWrittenFrom returns how many live entries of namespace were
	// written from conversation (SourceConversation).
	CountWrittenFrom(ctx context.Context, tenant, namespace, conversation string, now time.Time) (int64, error)
	// ForgetNamespace erases every entry of the namespace in every memory,
	// in one transaction, and returns how many were erased.
	ForgetNamespace(ctx context.Context, tenant, namespace string) (int64, error)
	// ReadStore lists conversations and turns.
	ReadStore
}

// ReadStore is what the conversation read side (read.go) needs from a store,
// besides Store. Implementations are safe for concurrent use.
type ReadStore interface {
	// ListConversations examines up to q.Limit namespaces of q.Tenant that
	// start with q.Prefix, after q.After in byte order, in which q.MemoryID
	// (or, when it is "", any memory) holds entries, and returns their
	// records, in that order, with live entries counted at q.Now (a
	// namespace whose entries all expired may be left out), and the last
	// namespace examined when more may follow ("" when none can).
	ListConversations(ctx context.Context, q ConversationQuery) ([]ConversationRecord, string, error)
	// ListTurns returns the records of q.Turns, or of up to q.Limit turns
	// below q.Before, newest first: the turns that live entries carry,
	// that recall receipts were recorded for, that runs were opened for, or
	// that a turn was posted with links to. A turn of q.Turns with nothing
	// stored or linked comes back with empty records.
	ListTurns(ctx context.Context, q TurnQuery) ([]TurnRecord, error)
}

// ForgetReport is what forgetting a principal erased.
type ForgetReport struct {
	// Conversations is how many of the principal's conversations had
	// entries; ConversationEntries how many entries they held.
	Conversations       int64
	ConversationEntries int64
	// PrincipalEntries is how many entries the principal-scoped memories
	// held for the principal.
	PrincipalEntries int64
	// Recalls, Runs and Ablations are the audit records erased with them
	// (receipts of recalls made for the principal, recordings of their
	// runs, ablation reruns of their turns).
	Recalls, Runs, Ablations int64
}
