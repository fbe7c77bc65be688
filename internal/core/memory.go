package core

import (
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
	Version     int64  // 1 on create, +1 on every replace
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
