package core

import (
	"time"
)

// Capabilities is what this deployment can run: its embedders, its LLM
// providers and its store. The strategy catalogue's offerable flags and the
// requirements backstop are computed from it, so a picker never offers a
// strategy that definition would then refuse.
type Capabilities struct {
	Embedders []EmbedderInfo
	LLMs      []LLMInfo
	Store     StoreInfo
	Limits    Limits
}

// EmbedderInfo describes one configured embedder.
type EmbedderInfo struct {
	ID          string
	Kind        string // "hash", "openai" or "ollama"
	Model       string
	Dimensions  int
	Default     bool
	Description string
	// Ranking is what a topK read on this embedder uses when its strategy leaves the ranking,
	// alpha or threshold unset.
	Ranking RankingDefaults
}

// StoreInfo describes a store implementation.
type StoreInfo struct {
	Kind         string // "memory" or "postgres"
	RanksVectors bool   // can rank stored vectors by similarity (topK)
}

// DefaultIdempotencyTTL is how long an Idempotency-Key is remembered unless
// the deployment says otherwise.
const DefaultIdempotencyTTL = 24 * time.Hour

// LLMInfo describes one configured chat-completions provider.
type LLMInfo struct {
	ID    string
	Model string // the provider's default model, if configured
}

// Limits are the request limits the deployment enforces, published so that
// clients can pre-validate.
type Limits struct {
	MaxBodyBytes    int64
	DefaultPageSize int
	MaxPageSize     int
}

// DefaultEmbedder returns the embedder used when a memory names none.
func (c Capabilities) DefaultEmbedder() (EmbedderInfo, bool) {
	for _, e := range c.Embedders {
		if e.Default {
			return e, true
		}
	}
	if len(c.Embedders) > 0 {
		return c.Embedders[0], true
	}
	return EmbedderInfo{}, false
}

// Embedder returns the embedder with the given id.
func (c Capabilities) Embedder(id string) (EmbedderInfo, bool) {
	for _, e := range c.Embedders {
		if e.ID == id {
			return e, true
		}
	}
	return EmbedderInfo{}, false
}

// LLM returns the LLM provider with the given id.
func (c Capabilities) LLM(id string) (LLMInfo, bool) {
	for _, l := range c.LLMs {
		if l.ID == id {
			return l, true
		}
	}
	return LLMInfo{}, false
}

func (c Capabilities) EmbedderIDs() []string {
	ids := make([]string, len(c.Embedders))
	for i, e := range c.Embedders {
		ids[i] = e.ID
	}
	return ids
}

func (c Capabilities) LLMIDs() []string {
	ids := make([]string, len(c.LLMs))
	for i, l := range c.LLMs {
		ids[i] = l.ID
	}
	return ids
}

// supplies reports whether the deployment itself supplies a requirement.
// `model` is always the caller's to name (never a deployment fallback: the
// seed refuses to bill a guessed model), so it is never missing here.
func (c Capabilities) Supplies(r Requirement) bool {
	switch r {
	case ReqEmbedder:
		return len(c.Embedders) > 0
	case ReqVectorStore:
		return c.Store.RanksVectors
	case ReqLLM:
		return len(c.LLMs) > 0
	default:
		return true
	}
}
