// Package memories is footprint's memory definitions: defining (validated by
// the strategies package), reading, replacing and deleting them, and the
// short-lived cache through which the turn and recall paths read a tenant's
// definitions.
package memories

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// DefaultCacheTTL is how long a tenant's definitions are cached unless
// Deps.CacheTTL says otherwise.
const DefaultCacheTTL = 2 * time.Second

// Deps is what a Service needs.
type Deps struct {
	Store Store
	Caps  core.Capabilities
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// CacheTTL is how long Memories may serve a tenant's definitions
	// without asking the store (0: DefaultCacheTTL; < 0: no cache). Changes
	// made through this Service are seen at once; changes made through
	// another replica within the TTL.
	CacheTTL time.Duration
	// KeyTTL is how long an Idempotency-Key is kept (0: core.DefaultIdempotencyTTL).
	KeyTTL time.Duration
}

// Service defines and reads memory definitions. Safe for concurrent use.
type Service struct {
	store  Store
	caps   core.Capabilities
	now    func() time.Time
	cache  *cache
	keyTTL time.Duration
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	ttl := d.CacheTTL
	switch {
	case ttl == 0:
		ttl = DefaultCacheTTL
	case ttl < 0:
		ttl = 0
	}
	return &Service{store: d.Store, caps: d.Caps, now: d.Now, cache: &cache{ttl: ttl, byTenant: map[string]cachedMemories{}}, keyTTL: d.KeyTTL}
}

// stamp returns the current time at the precision every store keeps
// (milliseconds, as the API prints them), so what a create returns equals
// what a later read returns.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// DefineMemory validates p and, unless dryRun, stores it for tenant. A dry run returns the
// normalised definition with no Version and zero times: nothing was stored.
// Returns a *ValidationError (ErrInvalid) when p is refused, and a
// *ConflictError (ErrConflict) when the tenant already has that id.
func (s *Service) DefineMemory(ctx context.Context, tenant string, p strategies.MemoryParams, dryRun bool) (core.Memory, error) {
	m, _, err := s.DefineMemoryWithKey(ctx, tenant, p, dryRun, "")
	return m, err
}

// DefineMemoryWithKey is DefineMemory with an Idempotency-Key (none when key is ""): a retry
// of the same definition with the same key answers the memory as first created (replayed
// true) instead of 409 memory-exists; the key with another request is refused
// (idempotency-key-reused). A dry run stores nothing, so it claims no key.
func (s *Service) DefineMemoryWithKey(ctx context.Context, tenant string, p strategies.MemoryParams, dryRun bool, key string) (_ core.Memory, replayed bool, _ error) {
	m, err := strategies.ValidateMemory(p, s.caps)
	if err != nil {
		return core.Memory{}, false, err
	}
	m.Tenant = tenant
	if dryRun {
		// The same checks as a real create, the id's availability included. Nothing is
		// stored, so the definition gets no version and no times.
		if _, err := s.store.GetMemory(ctx, tenant, m.ID); err == nil {
			return core.Memory{}, false, memoryExists(m.ID)
		} else if !errors.Is(err, core.ErrNotFound) {
			return core.Memory{}, false, err
		}
		return m, false, nil
	}
	now := s.stamp()
	m.Version, m.CreatedAt, m.UpdatedAt = 1, now, now
	once, err := core.NewOnce(key, "createMemory", p, m, now, s.keyTTL)
	if err != nil {
		return core.Memory{}, false, err
	}
	if err := s.store.CreateMemory(ctx, m, once); err != nil {
		switch {
		case errors.Is(err, ErrMemoryExists):
			return core.Memory{}, false, memoryExists(m.ID)
		case errors.Is(err, core.ErrKeyReused):
			return core.Memory{}, false, core.KeyReused("createMemory")
		}
		return core.Memory{}, false, err
	}
	if once != nil && once.Replay != nil {
		var first core.Memory
		if err := json.Unmarshal(once.Replay, &first); err != nil {
			return core.Memory{}, false, fmt.Errorf("decode stored idempotent response: %w", err)
		}
		return first, true, nil
	}
	s.cache.invalidate(tenant)
	return m, false, nil
}

// GetMemory returns the tenant's memory, or ErrNotFound.
func (s *Service) GetMemory(ctx context.Context, tenant, id string) (core.Memory, error) {
	return s.store.GetMemory(ctx, tenant, id)
}

// ListMemories returns up to limit memories after the id `after`, ordered
// by id, and whether more exist.
func (s *Service) ListMemories(ctx context.Context, tenant, after string, limit int) ([]core.Memory, bool, error) {
	ms, err := s.store.ListMemories(ctx, tenant, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(ms) > limit {
		return ms[:limit], true, nil
	}
	return ms, false, nil
}

// ReplaceMemory re-validates p and replaces the tenant's memory id with it.
// p.ID must be empty or equal id. When expectVersion is non-nil the replace
// succeeds only if it equals the stored version (a *ConflictError with code
// version-conflict otherwise). The type may not change while entries could
// exist under the old one: changing it is refused.
func (s *Service) ReplaceMemory(ctx context.Context, tenant, id string, p strategies.MemoryParams, expectVersion *int64) (core.Memory, error) {
	return s.ReplaceMemoryIfMatch(ctx, tenant, id, p, expectVersion, nil)
}

// ReplaceMemoryIfMatch is ReplaceMemory with an HTTP If-Match precondition: when ifMatch is
// not nil, the replace happens only if the stored definition's Revision is one of ifMatch (or
// ifMatch holds "*"), checked under the store's lock with the change; otherwise it is a
// *core.PreconditionError and nothing changes.
func (s *Service) ReplaceMemoryIfMatch(ctx context.Context, tenant, id string, p strategies.MemoryParams, expectVersion *int64, ifMatch []string) (core.Memory, error) {
	if p.ID != "" && p.ID != id {
		return core.Memory{}, &core.ValidationError{Code: core.CodeInvalidField, Site: fmt.Sprintf("replaceMemory[%s]", id), Path: "id",
			Detail: fmt.Sprintf("the body's `id` (%s) differs from the path's (%q); a memory cannot be renamed — omit `id` or make them equal.", core.DescribeJSON(p.ID), id), Fix: id}
	}
	p.ID = id
	next, err := strategies.ValidateMemory(p, s.caps)
	if err != nil {
		return core.Memory{}, err
	}
	now := s.stamp()
	defer s.cache.invalidate(tenant)
	return s.store.UpdateMemory(ctx, tenant, id, func(m *core.Memory) error {
		if ifMatch != nil && !slices.Contains(ifMatch, "*") && !slices.Contains(ifMatch, m.Revision()) {
			return &core.PreconditionError{Detail: fmt.Sprintf("memory %q changed since the representation your If-Match names (it is at version %d now); GET it again, re-apply your change and send its new ETag.", id, m.Version)}
		}
		if expectVersion != nil && *expectVersion != m.Version {
			return &core.ConflictError{Code: "version-conflict", Detail: fmt.Sprintf("memory %q is at version %d, not %d; GET it again and re-apply your change.", id, m.Version, *expectVersion)}
		}
		if next.Scope != m.Scope {
			return &core.ValidationError{Code: core.CodeInvalidField, Site: fmt.Sprintf("replaceMemory[%s]", id), Path: "scope",
				Detail: fmt.Sprintf("a memory's scope cannot change (it is %s; its entries live in that scope's namespaces). Define a new memory instead.", scopeName(m.Scope)), Fix: scopeName(m.Scope)}
		}
		if next.Type != m.Type {
			return &core.ValidationError{Code: core.CodeInvalidField, Site: fmt.Sprintf("replaceMemory[%s]", id), Path: "type",
				Detail: fmt.Sprintf("a memory's type cannot change (it is %s; the entries stored under it have that shape). Define a new memory instead.", m.Type), Fix: string(m.Type)}
		}
		next.Tenant, next.Version, next.CreatedAt, next.UpdatedAt = tenant, m.Version+1, m.CreatedAt, now
		*m = next
		return nil
	})
}

// DeleteMemory deletes the tenant's memory; with purge, its entries too.
func (s *Service) DeleteMemory(ctx context.Context, tenant, id string, purge bool) error {
	defer s.cache.invalidate(tenant)
	return s.store.DeleteMemory(ctx, tenant, id, purge)
}

// Memories returns every memory of the tenant, in id order, from the cache
// when it is fresh. Callers must not modify the returned slice.
func (s *Service) Memories(ctx context.Context, tenant string) ([]core.Memory, error) {
	return s.cache.get(ctx, tenant, s.all)
}

// all pages through every memory of the tenant.
func (s *Service) all(ctx context.Context, tenant string) ([]core.Memory, error) {
	var all []core.Memory
	after := ""
	for {
		page, err := s.store.ListMemories(ctx, tenant, after, 200)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < 200 {
			return all, nil
		}
		after = page[len(page)-1].ID
	}
}

// memoryExists is the refusal of a create whose id the tenant already has.
func memoryExists(id string) error {
	return &core.ConflictError{Code: core.CodeMemoryExists, Path: "id",
		Detail: fmt.Sprintf("memory %q already exists; PUT /v1/memories/%s replaces it.", id, id)}
}

// scopeName is a stored scope as the API names it ("" is a conversation scope).
func scopeName(s core.MemoryScope) string {
	if s == "" {
		return string(core.ScopeConversation)
	}
	return string(s)
}
