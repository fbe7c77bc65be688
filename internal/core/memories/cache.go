package memories

import (
	"context"
	"sync"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// cache keeps each tenant's memory definitions for a short TTL, so
// the turn path does not list them from the store on every turn (measured:
// ~8% of a turn's CPU and one extra database round trip). Definitions change
// rarely and only through Define/Replace/Delete, which invalidate the
// tenant here at once; another replica's changes are seen within the TTL.
// Callers must not modify the returned slice.
type cache struct {
	ttl      time.Duration
	mu       sync.Mutex
	byTenant map[string]cachedMemories
}

type cachedMemories struct {
	memories []core.Memory
	loaded   time.Time
	gen      uint64
}

// get returns the tenant's memories, loading them with load when absent or
// older than the TTL.
func (c *cache) get(ctx context.Context, tenant string, load func(context.Context, string) ([]core.Memory, error)) ([]core.Memory, error) {
	if c.ttl <= 0 {
		return load(ctx, tenant)
	}
	c.mu.Lock()
	e, ok := c.byTenant[tenant]
	c.mu.Unlock()
	if ok && e.memories != nil && time.Since(e.loaded) < c.ttl {
		return e.memories, nil
	}
	started := time.Now()
	ms, err := load(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if ms == nil {
		ms = []core.Memory{}
	}
	c.mu.Lock()
	// Store only if no invalidation happened while loading: a load that
	// raced a change may hold the old definitions.
	if cur := c.byTenant[tenant]; cur.gen == e.gen {
		c.byTenant[tenant] = cachedMemories{memories: ms, loaded: started, gen: e.gen}
	}
	c.mu.Unlock()
	return ms, nil
}

// invalidate drops the tenant's cached definitions.
func (c *cache) invalidate(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byTenant[tenant]
	c.byTenant[tenant] = cachedMemories{gen: e.gen + 1}
}
