package pg

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/footprint/footprint/internal/core"
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
// Writes to one namespace from this process are queued here first, one at a time, so each
// sees the turn its predecessor committed and the guess is right; writes to other namespaces
// never wait for each other.
type turnPredictor struct {
	hits, stale atomic.Int64 // predicted writes that committed / that were redone the long way

	mu      sync.Mutex
	locks   map[string]*keyLock
	highest map[string]int              // turnKey → the highest live turn last committed
	fps     map[string]core.Fingerprint // fpKey → the memory's vector fingerprint there
}

// maxRemembered bounds each map; when one is full it is emptied (a forgotten guess costs one
// round trip, never correctness).
const maxRemembered = 1 << 16

type keyLock struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int           // holders and waiters; the lock is dropped from the map at zero
}

// prediction is what a turn write may assume instead of reading it.
type prediction struct {
	highest int
	fps     map[string]core.Fingerprint // by memory id
}

func newTurnPredictor() *turnPredictor {
	return &turnPredictor{locks: map[string]*keyLock{}, highest: map[string]int{}, fps: map[string]core.Fingerprint{}}
}

// turnKey names what "the highest turn" is computed over: the namespace, the memories and the
// kinds scanned.
func turnKey(tenant, namespace string, memoryIDs, kinds []string) string {
	return tenant + "\x1f" + namespace + "\x1f" + strings.Join(memoryIDs, "\x1e") + "\x1f" + strings.Join(kinds, "\x1e")
}

func fpKey(tenant, namespace, memoryID string) string {
	return tenant + "\x1f" + namespace + "\x1f" + memoryID
}

// lock queues the caller behind this process's other writes to key; it gives up when ctx is
// done. The returned func releases the lock.
func (p *turnPredictor) lock(ctx context.Context, key string) (func(), error) {
	p.mu.Lock()
	l := p.locks[key]
	if l == nil {
		l = &keyLock{ch: make(chan struct{}, 1)}
		p.locks[key] = l
	}
	l.refs++
	p.mu.Unlock()
	drop := func() {
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.locks, key)
		}
		p.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// predict returns what a write of w may assume, or nil when this process does not know it
// (first write here, a fingerprint not seen yet, nothing stored yet).
func (p *turnPredictor) predict(key string, w core.TurnWrite) *prediction {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.highest[key]
	if !ok || h < 1 {
		return nil
	}
	pr := &prediction{highest: h, fps: make(map[string]core.Fingerprint, len(w.Fingerprints))}
	for _, f := range w.Fingerprints {
		have, ok := p.fps[fpKey(w.Tenant, w.Namespace, f.MemoryID)]
		if !ok || have != f {
			return nil // unknown, or a mismatch: let the long way report it from the store
		}
		pr.fps[f.MemoryID] = have
	}
	return pr
}

// remember records what a committed write of w left: the highest live turn (before is the one
// it started from) and the fingerprints now stored.
func (p *turnPredictor) remember(key string, w core.TurnWrite, before int, written []core.Entry, fps map[string]core.Fingerprint, memoryIDs, kinds []string) {
	highest := before
	for _, e := range written {
		if e.Turn > highest && contains(memoryIDs, e.MemoryID) && contains(kinds, string(e.Kind)) &&
			(e.ExpiresAt.IsZero() || e.ExpiresAt.After(w.Now.Add(time.Second))) {
			highest = e.Turn
		}
	}
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

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
