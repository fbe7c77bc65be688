package pg

import (
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// Shared commits: predicted turn writes to DIFFERENT namespaces share transactions.
//
// Per-namespace group commit (turngroup.go) helps a busy conversation; it does nothing for many
// conversations each written by one client, where every turn paid a transaction of its own:
// BEGIN, the lock, the check, the entries, COMMIT, one round trip, one commit record. Measured
// with pg_stat_statements and CPU counters, that per-transaction part was over half of
// Postgres' work per turn. So a predicted write (a unit: one namespace's group, or a single
// write) goes through a committer that runs at most maxInFlightCommits transactions at a time;
// units that arrive while all are busy wait, and the next free transaction takes them together
// (up to maxGroup writes, one unit per namespace), in ONE transaction and one round trip:
//
//	BEGIN; every namespace's advisory lock, in one statement and in hash order;
//	per unit: the check of its predicted highest turn, its entries; COMMIT
//
// Locks are taken in one global order (ascending lock key), so two such transactions, here or
// in another process, can never wait for each other in a cycle; a single-namespace write takes
// one lock and cannot be part of a cycle either. A write alone, with nothing in flight, pays
// nothing for this: it runs at once.
//
// A shared transaction fails as a whole. When Postgres refused one of its statements, nothing
// was stored, and the unit whose statement failed (a stale guess, a live entry in the way) has
// each of its writes redone alone, as if it had never been grouped — the long way after a stale
// guess; the other units are tried again in shared transactions, each failure removing its
// culprit (at most maxSharedAttempts tries; a refusal of nobody's statement, such as a lock
// timeout, is tried once more), then alone. One conversation's failure never decides another's
// outcome. When the connection was lost instead, the COMMIT may have been applied with its answer
// lost: nothing is redone, and every caller in it gets the error, as a write alone would.

// maxInFlightCommits is how many shared transactions may be in flight at once. Two keeps both of
// this machine's cores busy in Postgres while one transaction's round trip is on the wire; more
// only splits waiting writes into smaller groups.
const maxInFlightCommits = 2

// maxSharedAttempts bounds the shared transactions one unit is tried in before it is written
// alone.
const maxSharedAttempts = 4

// lockNamespacesSQL takes the advisory locks of the namespaces ($1 tenants, $2 namespaces,
// pairwise) in ascending key order (keys as lockNamespaceSQL computes them). The aggregate reads
// the sorted subquery row by row, so the locks are taken in that order.
const lockNamespacesSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM (
	SELECT DISTINCT hashtextextended(t || chr(31) || n, 7317) AS k
	FROM unnest($1::text[], $2::text[]) AS x(t, n)
	ORDER BY k) keys`

// commitUnit is one namespace's predicted writes, waiting for or in a shared transaction.
type commitUnit struct {
	w         turns.TurnWrite // the first write's: tenant, namespace and the clock of the check
	memoryIDs []string
	kinds     []string
	highest   int // the predicted highest live turn before the first write
	parts     []unitPart
	done      chan commitResult // buffered: the outcome, or the lead
}

// unitPart is one write of a unit, on its resolved turn.
type unitPart struct {
	pt      *pendingTurn
	turn    int
	entries []core.Entry
	q       queuedWrites
	stored  []core.Entry
}

type commitResult struct {
	lead    bool
	err     error
	culprit bool // the error came from this unit's own check or writes
	blamed  bool // the error came from another unit's
}

// committer hands out shared transactions (see above).
type committer struct {
	mu       sync.Mutex
	waiting  []*commitUnit
	inFlight int
}

// join queues u and reports whether it may run at once (a transaction is free).
func (c *committer) join(u *commitUnit) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight < maxInFlightCommits {
		c.inFlight++
		return true
	}
	c.waiting = append(c.waiting, u)
	return false
}

// take removes the waiting units the next shared transaction writes after lead's: in queue
// order, at most one per namespace (a second unit of the same namespace would check its guess
// against the first's writes), at most maxGroup writes in all.
func (c *committer) take(lead *commitUnit) []*commitUnit {
	c.mu.Lock()
	defer c.mu.Unlock()
	units := []*commitUnit{lead}
	seen := map[string]bool{lead.w.Tenant + "\x1f" + lead.w.Namespace: true}
	writes := len(lead.parts)
	kept := c.waiting[:0]
	for _, u := range c.waiting {
		ns := u.w.Tenant + "\x1f" + u.w.Namespace
		if seen[ns] || writes+len(u.parts) > maxGroup {
			kept = append(kept, u)
			continue
		}
		seen[ns] = true
		writes += len(u.parts)
		units = append(units, u)
	}
	clear(c.waiting[len(kept):])
	c.waiting = kept
	return units
}

// handOff ends a shared transaction: the first waiting unit leads the next, or a slot frees.
func (c *committer) handOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.waiting) == 0 {
		c.inFlight--
		return
	}
	next := c.waiting[0]
	c.waiting = c.waiting[1:]
	next.done <- commitResult{lead: true} // never blocks: a waiting unit has been sent nothing
}

// commit writes u in a shared transaction and returns that transaction's outcome; on success
// each part's stored entries are set. The caller's goroutine may run the transaction for others
// too.
func (s *Store) commit(u *commitUnit) commitResult {
	u.done = make(chan commitResult, 1)
	if s.commits.join(u) {
		s.runShared([]*commitUnit{u})
	}
	for {
		r := <-u.done
		if !r.lead {
			return r
		}
		s.runShared(s.commits.take(u))
	}
}

// runShared writes units in one transaction and answers each of them (its own leader's too),
// then hands the transaction slot on. A unit's context is its writes': the transaction is
// cancelled only when every caller in it has gone.
func (s *Store) runShared(units []*commitUnit) {
	var (
		err     error
		culprit *commitUnit // whose statement failed first, if a unit's did
	)
	// A unit whose callers have all gone is not written: nothing was sent for it yet, and
	// nobody would learn its outcome. (The others' contexts must not carry it.)
	units = slices.DeleteFunc(units, func(u *commitUnit) bool {
		for _, p := range u.parts {
			if p.pt.ctx.Err() == nil {
				return false
			}
		}
		u.done <- commitResult{err: u.parts[0].pt.ctx.Err()}
		return true
	})
	defer func() {
		if r := recover(); r != nil {
			for _, u := range units {
				select {
				case u.done <- commitResult{err: errPanicked(r)}:
				default:
				}
			}
			s.commits.handOff()
			panic(r)
		}
		for _, u := range units {
			u.done <- commitResult{err: err, culprit: u == culprit, blamed: culprit != nil && u != culprit}
		}
		s.commits.handOff()
	}()
	if len(units) == 0 {
		return
	}
	var members []*pendingTurn
	tenants, namespaces := make([]string, len(units)), make([]string, len(units))
	for i, u := range units {
		tenants[i], namespaces[i] = u.w.Tenant, u.w.Namespace
		for _, p := range u.parts {
			members = append(members, p.pt)
		}
	}
	ctx, done := groupContext(members)
	defer done()
	ctx, endSpan := s.tel.commitSpan(ctx, members, len(units)) // telemetry.go
	defer func() { endSpan(err) }()
	b := &pgx.Batch{}
	head := s.queueBegin(b)
	b.Queue(lockNamespacesSQL, tenants, namespaces)
	for _, u := range units {
		sql, args := assertHighest(u.w.Tenant, u.w.Namespace, u.memoryIDs, u.kinds, u.w.Now, u.highest)
		b.Queue(sql, args...)
		for i := range u.parts {
			p := &u.parts[i]
			p.q = queueWrites(b, p.pt.w, p.turn, p.entries, nil)
		}
	}
	b.Queue("COMMIT")
	err = s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		if err := readN(br, head+1); err != nil { // BEGIN, the locks
			_ = br.Close()
			return err
		}
		for _, u := range units {
			if _, err := br.Exec(); err != nil { // the check
				culprit = u
				_ = br.Close()
				return err
			}
			for i := range u.parts {
				stored, err := u.parts[i].q.read(br)
				if err != nil {
					culprit = u
					_ = br.Close()
					return err
				}
				u.parts[i].stored = stored
			}
		}
		return br.Close() // COMMIT's
	})
	switch {
	case err != nil && culprit != nil && isStale(err):
		s.turns.stale.Add(1)
	case err == nil && len(members) > 1:
		s.turns.groups.Add(1)
	}
	if err == nil {
		s.tel.committed(len(members), len(units))
	}
}
