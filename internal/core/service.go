package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Service is the domain's entry point for the HTTP layer: it validates,
// stamps and delegates to the store. It is safe for concurrent use.
type Service struct {
	store     Store
	caps      Capabilities
	now       func() time.Time
	embedders map[string]Embedder
	keyTTL    time.Duration
	memories  *memoryCache
	llms      map[string]LLM
	onFold    func(llm, status string)
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithClock replaces the wall clock (tests).
func WithClock(now func() time.Time) ServiceOption {
	return func(s *Service) { s.now = now }
}

// WithEmbedders makes embedders available by their Info().ID. Their Info
// is also what Capabilities publishes, unless caps already lists them.
func WithEmbedders(es ...Embedder) ServiceOption {
	return func(s *Service) {
		for _, e := range es {
			s.embedders[e.Info().ID] = e
		}
	}
}

// WithMemoryCacheTTL sets how long a tenant's memory definitions are
// cached for the turn path (default 2s; 0 disables). Changes made through
// this Service are seen at once; changes made through another replica are
// seen within the TTL.
func WithMemoryCacheTTL(d time.Duration) ServiceOption {
	return func(s *Service) { s.memories.ttl = d }
}

// WithLLMs makes chat providers available by their Info().ID (summarize,
// LLM extraction). Their Info is published in Capabilities.
func WithLLMs(ls ...LLM) ServiceOption {
	return func(s *Service) {
		for _, l := range ls {
			s.llms[l.Info().ID] = l
		}
	}
}

// WithFoldObserver is called after every summarize fold attempt with the
// provider id and the outcome (folded, refused, failed), e.g. for metrics.
func WithFoldObserver(f func(llm, status string)) ServiceOption {
	return func(s *Service) { s.onFold = f }
}

// WithIdempotencyTTL sets how long idempotency keys are kept (default 24h).
func WithIdempotencyTTL(d time.Duration) ServiceOption {
	return func(s *Service) { s.keyTTL = d }
}

// NewService returns a Service over store for a deployment with caps.
// caps.Store is filled from the store itself.
func NewService(store Store, caps Capabilities, opts ...ServiceOption) *Service {
	caps.Store = store.Info()
	s := &Service{store: store, caps: caps, now: time.Now, embedders: map[string]Embedder{}, keyTTL: defaultKeyTTL, llms: map[string]LLM{},
		memories: &memoryCache{ttl: 2 * time.Second, byTenant: map[string]cachedMemories{}}}
	for _, o := range opts {
		o(s)
	}
	if len(s.caps.LLMs) == 0 {
		for _, l := range s.llms {
			s.caps.LLMs = append(s.caps.LLMs, l.Info())
		}
		slices.SortFunc(s.caps.LLMs, func(a, b LLMInfo) int { return strings.Compare(a.ID, b.ID) })
	}
	if len(s.caps.Embedders) == 0 {
		for _, e := range s.embedders {
			s.caps.Embedders = append(s.caps.Embedders, e.Info())
		}
		slices.SortFunc(s.caps.Embedders, func(a, b EmbedderInfo) int { return strings.Compare(a.ID, b.ID) })
	}
	return s
}

// Capabilities returns what this deployment can run.
func (s *Service) Capabilities() Capabilities { return s.caps }

// Ping reports whether the store is reachable.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// stamp returns the current time at the precision every store keeps
// (milliseconds, as the API prints them), so what a create returns equals
// what a later read returns.
func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// DefineMemory validates p and, unless dryRun, stores it for tenant.
// Returns a *ValidationError (ErrInvalid) when p is refused, and a
// *ConflictError (ErrConflict) when the tenant already has that id.
func (s *Service) DefineMemory(ctx context.Context, tenant string, p MemoryParams, dryRun bool) (Memory, error) {
	m, err := ValidateMemory(p, s.caps)
	if err != nil {
		return Memory{}, err
	}
	now := s.stamp()
	m.Tenant, m.Version, m.CreatedAt, m.UpdatedAt = tenant, 1, now, now
	if dryRun {
		// The same checks as a real create, the id's availability included.
		if _, err := s.store.GetMemory(ctx, tenant, m.ID); err == nil {
			return Memory{}, &ConflictError{Code: CodeMemoryExists, Detail: fmt.Sprintf("memory %q already exists; PUT /v1/memories/%s replaces it.", m.ID, m.ID)}
		} else if !errors.Is(err, ErrNotFound) {
			return Memory{}, err
		}
		return m, nil
	}
	if err := s.store.CreateMemory(ctx, m); err != nil {
		return Memory{}, err
	}
	s.memories.invalidate(tenant)
	return m, nil
}

// GetMemory returns the tenant's memory, or ErrNotFound.
func (s *Service) GetMemory(ctx context.Context, tenant, id string) (Memory, error) {
	return s.store.GetMemory(ctx, tenant, id)
}

// ListMemories returns up to limit memories after the id `after`, ordered
// by id, and whether more exist.
func (s *Service) ListMemories(ctx context.Context, tenant, after string, limit int) ([]Memory, bool, error) {
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
func (s *Service) ReplaceMemory(ctx context.Context, tenant, id string, p MemoryParams, expectVersion *int64) (Memory, error) {
	if p.ID != "" && p.ID != id {
		return Memory{}, &ValidationError{Code: CodeInvalidField, Site: fmt.Sprintf("replaceMemory[%s]", id), Path: "id",
			Detail: fmt.Sprintf("the body's `id` (%s) differs from the path's (%q); a memory cannot be renamed — omit `id` or make them equal.", describeJSON(p.ID), id), Fix: id}
	}
	p.ID = id
	next, err := ValidateMemory(p, s.caps)
	if err != nil {
		return Memory{}, err
	}
	now := s.stamp()
	defer s.memories.invalidate(tenant)
	return s.store.UpdateMemory(ctx, tenant, id, func(m *Memory) error {
		if expectVersion != nil && *expectVersion != m.Version {
			return &ConflictError{Code: "version-conflict", Detail: fmt.Sprintf("memory %q is at version %d, not %d; GET it again and re-apply your change.", id, m.Version, *expectVersion)}
		}
		if next.Type != m.Type {
			return &ValidationError{Code: CodeInvalidField, Site: fmt.Sprintf("replaceMemory[%s]", id), Path: "type",
				Detail: fmt.Sprintf("a memory's type cannot change (it is %s; the entries stored under it have that shape). Define a new memory instead.", m.Type), Fix: string(m.Type)}
		}
		next.Tenant, next.Version, next.CreatedAt, next.UpdatedAt = tenant, m.Version+1, m.CreatedAt, now
		*m = next
		return nil
	})
}

// DeleteMemory deletes the tenant's memory; with purge, its entries too.
func (s *Service) DeleteMemory(ctx context.Context, tenant, id string, purge bool) error {
	defer s.memories.invalidate(tenant)
	return s.store.DeleteMemory(ctx, tenant, id, purge)
}

func (s *Service) countFold(llm, status string) {
	if s.onFold != nil {
		s.onFold(llm, status)
	}
}

func isUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

func ctxDone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
