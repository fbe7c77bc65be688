package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// MemoryType says what a memory stores.
type MemoryType string

// The four memory types.
const (
	Episodic  MemoryType = "episodic"  // messages
	Semantic  MemoryType = "semantic"  // messages with embeddings, or extracted facts
	Narrative MemoryType = "narrative" // beats
	Causal    MemoryType = "causal"    // turn snapshots
)

// MemoryTypes lists every type in documentation order.
var MemoryTypes = []MemoryType{Episodic, Semantic, Narrative, Causal}

// MemoryScope says whose entries a memory keeps: one conversation's, or one
// end user's (the principal's) across all of their conversations.
type MemoryScope string

// The two scopes.
const (
	// ScopeConversation keeps entries in the conversation's namespace
	// (tenant/principal/conversation): the default.
	ScopeConversation MemoryScope = "conversation"
	// ScopePrincipal keeps entries in the principal's namespace
	// (tenant/principal/_), written by turns of every conversation of that
	// principal and read by recall in any of them.
	ScopePrincipal MemoryScope = "principal"
)

// MemoryScopes lists the scopes in documentation order.
var MemoryScopes = []MemoryScope{ScopeConversation, ScopePrincipal}

// Memory is a validated memory definition owned by a tenant. Values of this
// type come from DefineMemory (validated) or from a store (trusted rows).
type Memory struct {
	Tenant      string
	ID          string
	Type        MemoryType
	Strategy    Strategy
	Description string
	ReadOnly    bool
	TTLMs       int64  // 0: entries never expire
	Tier        string // "", "hot", "warm" or "cold"
	Embedder    string // embedder id; "" means the deployment default
	Projection  string // causal only: decisions, narrative, commits, full
	Corpus      bool   // a document corpus for RAG recall; never written by turns
	Flavor      string // "memory" or "rag"
	// Scope is where the memory's entries live; "" means ScopeConversation.
	Scope     MemoryScope
	Version   int64 // 1 on create, +1 on every replace
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PrincipalScoped reports whether m keeps its entries per principal.
func (m Memory) PrincipalScoped() bool { return m.Scope == ScopePrincipal }

// Revision tags this version of the stored definition, for HTTP validators
// (ETag, If-Match): it changes whenever the definition does (every replace
// bumps Version and UpdatedAt) and differs for a memory deleted and defined
// again under its id (CreatedAt). Opaque, 16 hex digits.
func (m Memory) Revision() string {
	sum := sha256.Sum256(fmt.Appendf(nil, "memory\x00%s\x00%d\x00%d\x00%d", m.ID, m.Version, m.CreatedAt.UnixMicro(), m.UpdatedAt.UnixMicro()))
	return hex.EncodeToString(sum[:8])
}
