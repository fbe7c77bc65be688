package strategies

import (
	"fmt"
	"slices"

	"github.com/footprint/footprint/internal/core"
)

// MemoryParams is a memory definition as a caller wrote it. Strategy is the
// raw decoded JSON value (any shape: the pipeline's first step is to check
// it), which is why this is not a Memory.
type MemoryParams struct {
	ID          string
	Type        string
	Strategy    any
	Description string
	ReadOnly    bool
	TTLMs       *int64
	Tier        string
	Embedder    string
	Projection  string
	Corpus      bool
	Flavor      string
	Scope       string
}

var (
	tiers       = []string{"hot", "warm", "cold"}
	projections = []string{"decisions", "narrative", "commits", "full"}
	flavors     = []string{"memory", "rag"}
	scopes      = []string{string(core.ScopeConversation), string(core.ScopePrincipal)}
)

const (
	maxDescription = 1000
	maxTTLMs       = 315_360_000_000 // ten years
)

// ValidateMemory runs the definition pipeline — id and type, then the
// strategy's shape, type dispatch, field rules, then the memory's own
// fields, then the requirements backstop — and returns the normalised
// memory (tenant, versions and times unset) or the first refusal as a
// *ValidationError.
func ValidateMemory(p MemoryParams, caps core.Capabilities) (core.Memory, error) {
	site := "defineMemory"
	v := validator{site: site, caps: caps, memoryEmbedder: p.Embedder}
	memFix := func(path, detail string, fix any) *core.ValidationError {
		return &core.ValidationError{Code: core.CodeInvalidField, Site: v.site, Path: path, Detail: detail, Fix: fix, See: "/v1/strategies"}
	}
	if p.ID == "" || !idPattern.MatchString(p.ID) {
		return core.Memory{}, memFix("id", fmt.Sprintf("`id` must match %s (a letter or digit, then up to 63 letters, digits, `.`, `_` or `-`); got %s.", core.IDPattern, core.DescribeJSON(p.ID)), "chat")
	}
	v.site = fmt.Sprintf("defineMemory[%s]", p.ID)
	typ := core.MemoryType(p.Type)
	if !slices.Contains(core.MemoryTypes, typ) {
		return core.Memory{}, memFix("type", fmt.Sprintf("`type` must be one of %s; got %s. episodic stores messages, semantic messages with embeddings or extracted facts, narrative beats, causal turn snapshots.", core.QuoteList(core.MemoryTypes), core.DescribeJSON(p.Type)), string(core.Episodic))
	}
	v.typ = typ

	if err := v.shape(p.Strategy, "strategy", 0); err != nil {
		return core.Memory{}, err
	}
	if err := v.dispatch(p.Strategy, "strategy"); err != nil {
		return core.Memory{}, err
	}
	strategy, err := v.fields(p.Strategy, "strategy")
	if err != nil {
		return core.Memory{}, err
	}

	m := core.Memory{
		ID:          p.ID,
		Type:        typ,
		Strategy:    strategy,
		Description: p.Description,
		ReadOnly:    p.ReadOnly,
		Tier:        p.Tier,
		Embedder:    p.Embedder,
		Projection:  p.Projection,
		Corpus:      p.Corpus,
		Flavor:      p.Flavor,
	}
	if reason := core.CheckText(p.Description); reason != "" {
		return core.Memory{}, memFix("description", "`description` "+reason+".", "Recent messages of this conversation.")
	}
	if n := len([]rune(p.Description)); n > maxDescription {
		return core.Memory{}, memFix("description", fmt.Sprintf("`description` must be at most %d characters; got %d.", maxDescription, n), "Recent messages of this conversation.")
	}
	if p.TTLMs != nil {
		if *p.TTLMs < 1 || *p.TTLMs > maxTTLMs {
			return core.Memory{}, memFix("ttlMs", fmt.Sprintf("`ttlMs` must be a whole number of milliseconds from 1 to %d (ten years); got %d. Omit it for entries that never expire.", maxTTLMs, *p.TTLMs), 86_400_000)
		}
		m.TTLMs = *p.TTLMs
	}
	if p.Tier != "" && !slices.Contains(tiers, p.Tier) {
		return core.Memory{}, memFix("tier", fmt.Sprintf("`tier` must be one of %s; got %s.", core.QuoteList(tiers), core.DescribeJSON(p.Tier)), "hot")
	}
	if p.Embedder != "" && !idPattern.MatchString(p.Embedder) {
		return core.Memory{}, memFix("embedder", fmt.Sprintf("`embedder` must match %s; got %s.", core.IDPattern, core.DescribeJSON(p.Embedder)), defaultEmbedderID(caps))
	}
	if p.Projection != "" {
		if typ != core.Causal {
			return core.Memory{}, memFix("projection", fmt.Sprintf("`projection` shapes how causal snapshots are recalled; a %s memory has no snapshots. Remove it, or use type `causal`.", typ), nil)
		}
		if !slices.Contains(projections, p.Projection) {
			return core.Memory{}, memFix("projection", fmt.Sprintf("`projection` must be one of %s; got %s.", core.QuoteList(projections), core.DescribeJSON(p.Projection)), "decisions")
		}
	}
	if typ == core.Causal && m.Projection == "" {
		m.Projection = "decisions"
	}
	if p.Corpus && (typ != core.Semantic || strategy.Kind != core.TopK) {
		return core.Memory{}, memFix("corpus", fmt.Sprintf("a corpus holds documents ranked by similarity, so it must be a semantic memory with the `topK` strategy; this one is %s with `%s`.", typ, strategy.Kind), false)
	}
	if p.Flavor != "" && !slices.Contains(flavors, p.Flavor) {
		return core.Memory{}, memFix("flavor", fmt.Sprintf("`flavor` must be one of %s; got %s.", core.QuoteList(flavors), core.DescribeJSON(p.Flavor)), "memory")
	}
	if m.Flavor == "" {
		m.Flavor = "memory"
		if m.Corpus {
			m.Flavor = "rag"
		}
	}
	if err := validScope(&m, p.Scope, memFix); err != nil {
		return core.Memory{}, err
	}
	if m.Embedder != "" {
		if _, ok := caps.Embedder(m.Embedder); !ok {
			return core.Memory{}, &core.ValidationError{Code: core.CodeMissingRequirement, Site: v.site, Path: "embedder",
				Detail: fmt.Sprintf("`embedder` names `%s`, which this server does not have. Configured embedders: %s. Omit it for the server default.", m.Embedder, orNone(caps.EmbedderIDs())),
				Fix:    defaultEmbedderID(caps), See: "/v1/capabilities", Extra: map[string]any{"requirement": string(core.ReqEmbedder)}}
		}
	}
	if err := v.requirements(strategy, "strategy", false); err != nil {
		return core.Memory{}, err
	}
	return m, nil
}

func defaultEmbedderID(caps core.Capabilities) any {
	if e, ok := caps.DefaultEmbedder(); ok {
		return e.ID
	}
	return nil
}

// validScope checks the memory's scope and sets it (absent: conversation). A principal scope
// shares entries across the principal's conversations, so it is refused where that means
// nothing: an episodic memory is one conversation's messages in their order, and a corpus is
// the tenant's documents, shared by every principal already.
func validScope(m *core.Memory, scope string, refuse func(path, detail string, fix any) *core.ValidationError) error {
	if scope == "" {
		scope = string(core.ScopeConversation)
	}
	if !slices.Contains(scopes, scope) {
		return refuse("scope", fmt.Sprintf("`scope` must be one of %s; got %s. `conversation` keeps entries per conversation; `principal` keeps them per end user, across their conversations.",
			core.QuoteList(scopes), core.DescribeJSON(scope)), string(core.ScopeConversation))
	}
	if scope != string(core.ScopePrincipal) {
		return nil // the default, kept as the zero value (Memory.Scope "")
	}
	m.Scope = core.ScopePrincipal
	switch {
	case m.Corpus:
		return refuse("scope", "a corpus is the tenant's documents, searched by every conversation of every principal already; it has no principal scope. Remove `scope`, or keep it `conversation`.", string(core.ScopeConversation))
	case m.Type == core.Episodic:
		return refuse("scope", "an episodic memory is one conversation's messages in their order, and the turns of two conversations have no order between them, so it cannot be kept per principal. "+
			"To remember what a user said across conversations, use a semantic memory: {\"type\":\"semantic\",\"strategy\":{\"kind\":\"extract\"},\"scope\":\"principal\"} keeps facts, {\"type\":\"semantic\",\"strategy\":{\"kind\":\"topK\"},\"scope\":\"principal\"} searches everything they said.",
			string(core.ScopeConversation))
	}
	return nil
}
