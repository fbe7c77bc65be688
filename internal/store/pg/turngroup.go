package pg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// Group commit of turn writes to one namespace (turncache.go says why and when); the groups
// of different namespaces then share transactions (turncommit.go).

// writeTurnQueued queues w behind this process's other writes to its namespace and returns
// its outcome: written alone, or in a group by whichever write leads.
func (s *Store) writeTurnQueued(ctx context.Context, w turns.TurnWrite, memoryIDs, kinds []string) (turns.TurnOutcome, error) {
	key := turnKey(w.Tenant, w.Namespace, memoryIDs, kinds)
	pt := &pendingTurn{ctx: ctx, w: w, done: make(chan pendingResult, 1)}
	if s.turns.join(key, pt) {
		s.lead(key, memoryIDs, kinds)
	}
	for {
		select {
		case r := <-pt.done:
			if r.lead {
				s.lead(key, memoryIDs, kinds)
				continue
			}
			return r.out, r.err
		case <-ctx.Done():
			if s.turns.leave(key, pt) {
				return turns.TurnOutcome{}, translate(ctx.Err(), "write turn", "", "")
			}
			// Taken into a group, or handed the lead: the outcome is on its way.
			r := <-pt.done
			if r.lead {
				s.lead(key, memoryIDs, kinds)
				r = <-pt.done
			}
			return r.out, r.err
		}
	}
}

// lead writes the writes waiting in key's queue (the leader's own among them), delivers every
// outcome, and hands the lead on. The writes this process can predict go together, as one
// unit of a shared transaction (turncommit.go); the others — this process does not know the
// namespace yet, or a write brings a fingerprint it has not seen — and every write of a unit
// that could not be committed with others (see writePredicted) are written alone, in queue
// order.
func (s *Store) lead(key string, memoryIDs, kinds []string) {
	defer s.turns.handOff(key)
	group := s.turns.take(key)
	defer func() {
		// A panic while writing must not leave the group's other callers waiting forever:
		// each gets an error (one already answered keeps its answer), then it goes on up.
		if r := recover(); r != nil {
			for _, pt := range group {
				select {
				case pt.done <- pendingResult{err: errPanicked(r)}:
				default:
				}
			}
			panic(r)
		}
	}()
	var members, alone []*pendingTurn
	var p *prediction // the unit's: the highest turn is the same for all, fingerprints the first's
	for _, pt := range group {
		pp := s.turns.predict(key, pt.w)
		if pp == nil {
			alone = append(alone, pt)
			continue
		}
		if p == nil {
			p = pp
		}
		members = append(members, pt)
	}
	guess := true // whether the writes redone alone may still use a prediction
	if len(members) > 0 {
		var rest []*pendingTurn
		rest, guess = s.writePredicted(key, members, p, memoryIDs, kinds)
		alone = append(rest, alone...)
	}
	for _, pt := range alone {
		out, err := s.writeTurnAlone(pt.ctx, pt.w, key, memoryIDs, kinds, guess)
		pt.done <- pendingResult{out: out, err: err}
	}
}

// redoable reports whether a failed transaction certainly stored nothing: Postgres refused one
// of its statements with an ERROR (so the session lived on and the transaction was rolled
// back), or the error came before anything was sent. Any other failure — a connection lost
// mid-batch, a FATAL that ended the session, a Citus coordinator that lost a worker while it
// committed there (an ERROR, but the worker may have committed: citusFailure) — may have lost
// the answer to a COMMIT that was applied.
func redoable(err error) bool {
	var (
		pgErr    *pgconn.PgError
		conflict *turns.EntryInTheWay // a live entry in the way: an ERROR, already translated
	)
	if errors.As(err, &conflict) {
		return true
	}
	if _, unknown := citusFailure(err); unknown {
		return false
	}
	if errors.As(err, &pgErr) {
		sev := pgErr.SeverityUnlocalized
		if sev == "" {
			sev = pgErr.Severity
		}
		return sev == "ERROR"
	}
	return pgconn.SafeToRetry(err)
}

// errPanicked is what the callers of a write that panicked get.
func errPanicked(r any) error {
	return fmt.Errorf("pg: turn write panicked: %v", r)
}

// groupContext is done when every member's context is done: one client going away must not
// cancel the others' writes.
func groupContext(members []*pendingTurn) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(members[0].ctx))
	var live atomic.Int32
	live.Store(int32(len(members)))
	stops := make([]func() bool, len(members))
	for i, pt := range members {
		stops[i] = context.AfterFunc(pt.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
	}
	// AfterFunc runs f in a goroutine of its own even for a context already done: cancel at
	// once when every caller has already gone, so nothing is sent for them.
	if !slices.ContainsFunc(members, func(pt *pendingTurn) bool { return pt.ctx.Err() == nil }) {
		cancel()
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// writePredicted writes members (all predicted by p) as one unit of a shared transaction, each
// on the turn it would get alone after the ones before it, and delivers their outcomes. It
// returns the members still to be written: those whose Build failed are answered at once; when
// the unit cannot be committed, all the others are returned, to be written alone, and guess
// says whether p may still be right (it is not after this unit's own check failed).
func (s *Store) writePredicted(key string, members []*pendingTurn, p *prediction, memoryIDs, kinds []string) (rest []*pendingTurn, guess bool) {
	first := members[0].w
	u := &commitUnit{w: first, memoryIDs: memoryIDs, kinds: kinds, highest: p.highest}
	highest := p.highest
	for _, pt := range members {
		d, err := pt.w.Decide(turns.TurnFacts{Highest: highest, Fingerprints: maps.Clone(p.fps)})
		if err != nil || len(d.NewFingerprints) > 0 {
			// A refusal on predicted facts is confirmed by a write alone, which reads the
			// stored ones; a memory's first vectors are recorded by one.
			rest = append(rest, pt)
			continue
		}
		u.parts = append(u.parts, unitPart{pt: pt, turn: d.Turn, entries: d.Entries})
		highest = highestAfter(pt.w, highest, d.Entries)
	}
	if len(u.parts) == 0 {
		return rest, true
	}
	// Not at fault for a failed shared transaction: again (see maxSharedAttempts), then alone.
	r := s.commit(u)
	for attempt := 1; r.err != nil && redoable(r.err) && !r.culprit && attempt < maxSharedAttempts && (r.blamed || attempt == 1); attempt++ {
		r = s.commit(u)
	}
	if r.err != nil && !redoable(r.err) {
		// The transaction may have committed (a connection lost after its COMMIT went out):
		// writing again could store these turns twice, so each caller gets the error, as a
		// write alone would.
		err := translate(r.err, "write turn", "", "")
		for _, part := range u.parts {
			part.pt.done <- pendingResult{err: err}
		}
		return rest, true
	}
	if r.err != nil {
		for _, part := range u.parts {
			rest = append(rest, part.pt)
		}
		return rest, !r.culprit || !isStale(r.err)
	}
	s.turns.hits.Add(int64(len(u.parts)))
	var written []core.Entry
	for _, part := range u.parts {
		written = append(written, part.stored...)
		part.pt.done <- pendingResult{out: turns.TurnOutcome{Turn: part.turn, Entries: part.stored}}
	}
	s.turns.remember(key, first, p.highest, written, p.fps)
	return rest, true
}
