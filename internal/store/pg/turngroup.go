package pg

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
)

// Group commit of turn writes to one namespace (turncache.go says why and when).

// writeTurnQueued queues w behind this process's other writes to its namespace and returns
// its outcome: written alone, or in a group by whichever write leads.
func (s *Store) writeTurnQueued(ctx context.Context, w core.TurnWrite, memoryIDs, kinds []string) (core.TurnOutcome, error) {
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
				return core.TurnOutcome{}, translate(ctx.Err(), "write turn", "", "")
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
// outcome, and hands the lead on.
func (s *Store) lead(key string, memoryIDs, kinds []string) {
	defer s.turns.handOff(key)
	group := s.turns.take(key)
	defer func() {
		// A panic while writing must not leave the group's other callers waiting forever:
		// each gets an error (one already answered keeps its answer), then it goes on up.
		if r := recover(); r != nil {
			for _, pt := range group {
				select {
				case pt.done <- pendingResult{err: fmt.Errorf("pg: turn write panicked: %v", r)}:
				default:
				}
			}
			panic(r)
		}
	}()
	if len(group) == 1 {
		out, err := s.writeTurnAlone(group[0].ctx, group[0].w, key, memoryIDs, kinds)
		group[0].done <- pendingResult{out: out, err: err}
		return
	}
	// Writes the group cannot take — this process does not know the namespace yet, or a
	// write brings a fingerprint it has not seen — and every write of a group that failed,
	// are written alone, in queue order.
	var members, alone []*pendingTurn
	var p *prediction // the group's: the highest turn is the same for all, fingerprints the first's
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
	if len(members) > 1 {
		alone = append(s.writeGroup(key, members, p, memoryIDs, kinds), alone...)
	} else {
		alone = append(members, alone...)
	}
	for _, pt := range alone {
		out, err := s.writeTurnAlone(pt.ctx, pt.w, key, memoryIDs, kinds)
		pt.done <- pendingResult{out: out, err: err}
	}
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
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// writeGroup writes members (at least two, all predicted by p) in one transaction and one
// round trip, each on the turn it would get alone after the ones before it, and delivers their
// outcomes. It returns the members still to be written: those whose Build failed are answered
// at once; when the batch fails, all the others are returned, to be written alone.
func (s *Store) writeGroup(key string, members []*pendingTurn, p *prediction, memoryIDs, kinds []string) []*pendingTurn {
	ctx, done := groupContext(members)
	defer done()
	first := members[0].w
	type part struct {
		pt   *pendingTurn
		turn int
		q    queuedWrites
	}
	b := &pgx.Batch{}
	queuePredicted(b, first, memoryIDs, kinds, p.highest, true)
	var parts []part
	highest := p.highest
	for _, pt := range members {
		turn := max(pt.w.HostTurn, highest+1)
		entries, err := pt.w.Build(turn)
		if err != nil {
			pt.done <- pendingResult{err: err} // the caller's own error, as alone
			continue
		}
		parts = append(parts, part{pt: pt, turn: turn, q: queueWrites(b, pt.w, turn, entries, nil)})
		highest = highestAfter(highest, entries, memoryIDs, kinds, pt.w.Now)
	}
	if len(parts) == 0 {
		return nil
	}
	b.Queue("COMMIT")
	outs := make([]core.TurnOutcome, len(parts))
	err := s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		if err := readPredicted(br, true); err != nil {
			_ = br.Close()
			return err
		}
		for i, pt := range parts {
			stored, err := pt.q.read(br)
			if err != nil {
				_ = br.Close()
				return err
			}
			outs[i] = core.TurnOutcome{Turn: pt.turn, Entries: stored}
		}
		return br.Close() // COMMIT's
	})
	if err != nil {
		if isStale(err) {
			s.turns.stale.Add(1)
		}
		rest := make([]*pendingTurn, len(parts))
		for i, pt := range parts {
			rest[i] = pt.pt
		}
		return rest
	}
	s.turns.hits.Add(int64(len(parts)))
	s.turns.groups.Add(1)
	var written []core.Entry
	for i, pt := range parts {
		written = append(written, outs[i].Entries...)
		pt.pt.done <- pendingResult{out: outs[i]}
	}
	s.turns.remember(key, first, p.highest, written, p.fps, memoryIDs, kinds)
	return nil
}
