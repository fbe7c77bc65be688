package storetest

import (
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// Turn is a turn write as the conformance cases spell it: a host turn, the memories and kinds
// that count, the fingerprints its vectors carry and a build function. Write turns it into the
// turns.TurnWrite a store takes, deciding with the domain's own rule (turns.Decider), so that a
// case checks what the store reads and writes, never a rule of its own.
type Turn struct {
	Tenant, Namespace string
	HostTurn          int
	MemoryIDs         []string
	CountMessageTurns bool
	CountBeatTurns    bool
	Now               time.Time
	Build             func(turn int) ([]core.Entry, error)
	Fingerprints      []core.Fingerprint
	// PrincipalNamespace, when set, is the principal's namespace the write also locks; the
	// Fingerprints with a Namespace are read there.
	PrincipalNamespace string
	// Shared, when set, counts the conversation's turns kept in its principal's namespace.
	Shared        *turns.SharedScope
	Idempotency   *turns.IdempotencyClaim
	LinkRunID     string
	LinkRecallIDs []string
	Respond       func(turn int, written []core.Entry) ([]byte, error)
}

// Write is t as a store takes it.
func (t Turn) Write() turns.TurnWrite {
	build := t.Build
	if build == nil {
		build = func(int) ([]core.Entry, error) { return nil, nil }
	}
	memoryIDs := t.MemoryIDs
	if memoryIDs == nil {
		memoryIDs = []string{}
	}
	var fpMemories, principalFPs []string
	for _, f := range t.Fingerprints {
		if f.Namespace != "" {
			principalFPs = append(principalFPs, f.MemoryID)
		} else {
			fpMemories = append(fpMemories, f.MemoryID)
		}
	}
	return turns.TurnWrite{
		Tenant: t.Tenant, Namespace: t.Namespace,
		Scope:                        turns.TurnScope{MemoryIDs: memoryIDs, Kinds: turns.CountedKinds(t.CountMessageTurns, t.CountBeatTurns), Shared: t.Shared},
		FingerprintMemories:          fpMemories,
		PrincipalNamespace:           t.PrincipalNamespace,
		PrincipalFingerprintMemories: principalFPs,
		Now:                          t.Now,
		Decide:                       turns.Decider(max(t.HostTurn, 1), t.Fingerprints, build),
		Idempotency:                  t.Idempotency,
		LinkRunID:                    t.LinkRunID,
		LinkRecallIDs:                t.LinkRecallIDs,
		Respond:                      t.Respond,
	}
}
