package pg

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// A turn write must read the namespace's highest live turn under the namespace lock before it
// can build its entries (their ids carry the turn), which costs a round trip while the lock is
// held. turnPredictor lets most writes skip it: this process remembers the highest turn it
// last saw committed in each namespace, and the vector fingerprints there, and the write
// sends the lock, a CHECK that the stored highest turn is still the remembered one, the
// entries and COMMIT in one batch. The check runs under the lock, against committed data, so
// a wrong guess (another process wrote, an entry expired, the namespace was forgotten) can
// never write a wrong turn: the check fails, Postgres skips the rest of the batch, and the
// write is redone the long way, which also refreshes the memory.
//
// Writes to one namespace from this process are queued here first, so each sees the turn its
// predecessor committed and the guess is right; writes to other namespaces never wait for each
// other's locks. While one write of a namespace is in flight, the writes that queue up behind it
// are then written together, in queue order, in one transaction and one round trip (group
// commit): a busy conversation costs one round trip per group of turns, not per turn. Groups of
// different namespaces may share a transaction too (turncommit.go). Each still gets
// exactly the turn it would have got alone; if Postgres refuses the group's batch (a stale
// guess, a live entry in the way), each of its writes is redone alone, so a write's outcome never
// depends on another's. A lost connection is not redone: the COMMIT may have been applied.
type turnPredictor struct {
	hits, stale atomic.Int64 // predicted writes that committed / that were redone the long way
	groups      atomic.Int64 // transactions that wrote two or more queued writes

	mu      sync.Mutex
	queues  map[string]*turnQueue       // turnKey → the writes waiting there
	highest map[string]int              // turnKey → the highest live turn last committed
	fps     map[string]core.Fingerprint // fpKey → the memory's vector fingerprint there
}

// maxGroup bounds how many queued writes one transaction takes.
const maxGroup = 64

// turnQueue is one namespace's queue. While busy, one of its writes leads: it takes the
// waiting writes, writes them, and hands the lead to the next waiting write, if any.
type turnQueue struct {
	waiting []*pendingTurn
	busy    bool
}

// pendingTurn is a turn write waiting in a queue.
type pendingTurn struct {
	ctx     context.Context
	w       turns.TurnWrite
	done    chan pendingResult // buffered: the outcome, or the lead
	leading bool               // handed the lead (under turnPredictor.mu)
}

type pendingResult struct {
	lead bool
	out  turns.TurnOutcome
	err  error
}

// maxRemembered bounds each map; when one is full it is emptied (a forgotten guess costs one
// round trip, never correctness).
const maxRemembered = 1 << 16

// prediction is what a turn write may assume instead of reading it.
type prediction struct {
	highest int
	fps     map[string]core.Fingerprint // by memory id
}

func newTurnPredictor() *turnPredictor {
	return &turnPredictor{queues: map[string]*turnQueue{}, highest: map[string]int{}, fps: map[string]core.Fingerprint{}}
}

// turnKey names what "the highest turn" is computed over: the namespace, the memories and the
// kinds scanned.
func turnKey(tenant, namespace string, memoryIDs, kinds []string) string {
	return tenant + "\x1f" + namespace + "\x1f" + strings.Join(memoryIDs, "\x1e") + "\x1f" + strings.Join(kinds, "\x1e")
}

func fpKey(tenant, namespace, memoryID string) string {
	return tenant + "\x1f" + namespace + "\x1f" + memoryID
}

// join queues pt behind this process's other writes to key and reports whether it leads
// (nothing else is being written there).
func (p *turnPredictor) join(key string, pt *pendingTurn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	if q == nil {
		q = &turnQueue{}
		p.queues[key] = q
	}
	q.waiting = append(q.waiting, pt)
	if q.busy {
		return false
	}
	q.busy, pt.leading = true, true
	return true
}

// take removes up to maxGroup waiting writes of key, in queue order, for the leader to write.
func (p *turnPredictor) take(key string) []*pendingTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	n := min(len(q.waiting), maxGroup)
	group := slices.Clone(q.waiting[:n])
	q.waiting = slices.Delete(q.waiting, 0, n)
	return group
}

// leave withdraws pt, whose caller gave up, if it is still only waiting: not taken into a
// group and not handed the lead. Otherwise its outcome (or the lead) is on its way.
func (p *turnPredictor) leave(key string, pt *pendingTurn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	if q == nil || pt.leading {
		return false
	}
	if i := slices.Index(q.waiting, pt); i >= 0 {
		q.waiting = slices.Delete(q.waiting, i, i+1)
		return true
	}
	return false
}

// handOff ends a leader's turn: the first waiting write leads next, or key goes idle.
func (p *turnPredictor) handOff(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[key]
	if len(q.waiting) == 0 {
		delete(p.queues, key)
		return
	}
	next := q.waiting[0]
	next.leading = true
	next.done <- pendingResult{lead: true} // never blocks: a waiting write has been sent nothing
}

// predict returns what a write of w may assume, or nil when this process does not know it
// (first write here, a fingerprint not seen yet, nothing stored yet).
func (p *turnPredictor) predict(key string, w turns.TurnWrite) *prediction {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.highest[key]
	if !ok || h < 1 {
		return nil
	}
	pr := &prediction{highest: h, fps: make(map[string]core.Fingerprint, len(w.FingerprintMemories))}
	for _, id := range w.FingerprintMemories {
		have, ok := p.fps[fpKey(w.Tenant, w.Namespace, id)]
		if !ok {
			return nil // unknown: the long way reads it from the store
		}
		pr.fps[id] = have
	}
	return pr
}

// remember records what a committed write of w left: the highest live turn (before is the one
// it started from) and the fingerprints now stored.
func (p *turnPredictor) remember(key string, w turns.TurnWrite, before int, written []core.Entry, fps map[string]core.Fingerprint) {
	highest := highestAfter(w, before, written)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.highest) >= maxRemembered {
		clear(p.highest)
	}
	p.highest[key] = highest
	for id, f := range fps {
		if len(p.fps) >= maxRemembered {
			clear(p.fps)
		}
		p.fps[fpKey(w.Tenant, w.Namespace, id)] = f
	}
}

// forget drops everything remembered (a namespace was forgotten: rare, and cheap to relearn).
func (p *turnPredictor) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.highest)
	clear(p.fps)
}

// highestAfter is the namespace's highest live turn after written was stored on top of before,
// as the domain counts it (w.Scope) but a second later than the write: an entry about to expire
// is left out (counting it or not would both be risky; leaving it out only costs a redo).
func highestAfter(w turns.TurnWrite, before int, written []core.Entry) int {
	return w.Scope.HighestAfter(before, written, w.Now.Add(time.Second))
}
