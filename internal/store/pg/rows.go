package pg

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// This file is the seam between rows and core values: the only code that knows how a
// core.Memory or a core.Entry is laid out in columns. Optional fields are NULL in the database
// and zero values in core; timestamps come back in UTC at microsecond precision (Postgres's), which is what
// the in-memory store normalises to as well.

// memoryColumns lists memories' columns in the order scanMemory reads and memoryArgs writes.
const memoryColumns = `tenant, id, type, strategy, description, read_only, ttl_ms, tier,
	embedder, projection, corpus, flavor, version, created_at, updated_at, scope`

// memoryColumnsButTenant is memoryColumns without its first column, the tenant.
var memoryColumnsButTenant = strings.TrimPrefix(memoryColumns, "tenant, ")

// memoryArgs returns m's column values in memoryColumns order.
func memoryArgs(m core.Memory) ([]any, error) {
	strategy, err := json.Marshal(m.Strategy)
	if err != nil {
		return nil, fmt.Errorf("encode strategy of memory %q: %w", m.ID, err)
	}
	return []any{
		m.Tenant, m.ID, string(m.Type), string(strategy), m.Description, m.ReadOnly,
		nullInt64(m.TTLMs), nullString(m.Tier), nullString(m.Embedder), nullString(m.Projection),
		m.Corpus, m.Flavor, m.Version, m.CreatedAt, m.UpdatedAt, string(scopeOf(m)),
	}, nil
}

// scopeOf is m's scope as stored: conversation unless principal.
func scopeOf(m core.Memory) core.MemoryScope {
	if m.Scope == "" {
		return core.ScopeConversation
	}
	return m.Scope
}

// scanMemory reads one row of memoryColumns. A row whose strategy no longer parses is an
// internal error naming the memory, never a panic later.
func scanMemory(row pgx.Row) (core.Memory, error) {
	var (
		m                          core.Memory
		typ                        string
		strategy                   []byte
		ttl                        *int64
		tier, embedder, projection *string
		createdAt, updatedAt       time.Time
		scope                      string
	)
	err := row.Scan(&m.Tenant, &m.ID, &typ, &strategy, &m.Description, &m.ReadOnly,
		&ttl, &tier, &embedder, &projection, &m.Corpus, &m.Flavor, &m.Version, &createdAt, &updatedAt, &scope)
	if err != nil {
		return core.Memory{}, err
	}
	// jsonb keeps keys in an order of its own; ParseStored puts them back in the catalogue's.
	if m.Strategy, err = strategies.ParseStored(strategy); err != nil {
		return core.Memory{}, fmt.Errorf("decode stored strategy of memory %q: %w", m.ID, err)
	}
	m.Type = core.MemoryType(typ)
	if scope == string(core.ScopePrincipal) {
		m.Scope = core.ScopePrincipal // the default stays the zero value, as validation leaves it
	}
	m.TTLMs = deref(ttl)
	m.Tier = deref(tier)
	m.Embedder = deref(embedder)
	m.Projection = deref(projection)
	m.CreatedAt = createdAt.UTC()
	m.UpdatedAt = updatedAt.UTC()
	return m, nil
}

// nullString maps "" (unset) to NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullInt64 maps 0 (unset) to NULL.
func nullInt64(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// entryColumns lists entries' columns in the order scanEntry reads and entryArgs writes, except
// embedding_dims, which is written (entryArgs appends it) but never read back: it is the
// embedding's length.
const entryColumns = entryWrittenColumns + `, ` + entryUpsertedColumns

// entryWrittenColumns are the columns a write sends (entryArgs, without embedding_dims), in
// scanEntry's order; entryUpsertedColumns, read after them, are set by an upsert only.
const entryWrittenColumns = `tenant, memory_id, namespace, id, kind, turn, idx, value, metadata, version,
	created_at, updated_at, last_accessed_at, access_count, expires_at, tier, source_turn,
	source_run_id, embedding, embedding_model, source_conversation`

// entryUpsertedColumns are what a fact replaced when it was restated (upsertEntrySQL).
const entryUpsertedColumns = `superseded_value, superseded_conversation, superseded_turn`

// entryInsertColumns is entryWrittenColumns plus embedding_dims and the lexical features (never
// read back either: only rankings read them): the columns entryArgs returns.
const entryInsertColumns = entryWrittenColumns + `, embedding_dims, lex_terms, lex_freqs, lex_length`

// entryInsertArity is how many values entryArgs returns per entry.
const entryInsertArity = 25

// entrySelectColumns is entryColumns for a read: without the embedding (a NULL in its place,
// so scanEntry reads the same columns) unless withEmbedding is set, since vectors are large.
func entrySelectColumns(withEmbedding bool) string {
	if withEmbedding {
		return entryColumns
	}
	return entryColumnsNoEmbedding
}

// entryColumnsNoEmbedding is entryColumns with a NULL in the embedding's place: what a write
// returns, since its caller already holds the vector it sent.
const entryColumnsNoEmbedding = `tenant, memory_id, namespace, id, kind, turn, idx, value, metadata, version,
	created_at, updated_at, last_accessed_at, access_count, expires_at, tier, source_turn,
	source_run_id, NULL::vector AS embedding, embedding_model, source_conversation, ` + entryUpsertedColumns

// entryArgs returns e's column values in entryInsertColumns order. Turn 0 (no turn in the id)
// is NULL; Index is NULL only when the entry has neither turn nor index, so that msg-{n}-0
// keeps index 0 and listing order (idx DESC NULLS LAST) equals ordering by index with "none"
// lowest. Metadata nil is {}; an empty embedding is none.
func entryArgs(e core.Entry) []any {
	var idx *int
	if e.Turn != 0 || e.Index != 0 {
		idx = &e.Index
	}
	metadata := "{}"
	if len(e.Metadata) > 0 {
		metadata = string(e.Metadata)
	}
	// The vector goes as a pgvector.Vector VALUE, which pgvector-go's codec encodes in binary;
	// a *pgvector.Vector would fall back to its driver.Valuer (text formatting of every float,
	// parsed back by pgx before encoding): measured at 15% of a turn write's CPU.
	var (
		vec  any // nil is NULL
		dims *int
	)
	if len(e.Embedding) > 0 {
		n := len(e.Embedding)
		vec, dims = pgvector.NewVector(e.Embedding), &n
	}
	var expires *time.Time
	if !e.ExpiresAt.IsZero() {
		expires = &e.ExpiresAt
	}
	var (
		lexTerms  []string // nil is NULL
		lexFreqs  []int16
		lexLength *int
	)
	if l := e.Lexical; l != nil && len(l.Terms) > 0 {
		lexTerms, lexLength = l.Terms, &l.Length
		lexFreqs = make([]int16, len(l.Freqs))
		for i, f := range l.Freqs {
			lexFreqs[i] = int16(min(f, core.MaxTermFreq))
		}
	}
	return []any{
		e.Tenant, e.MemoryID, e.Namespace, e.ID, string(e.Kind), nullInt(e.Turn), idx,
		string(e.Value), metadata, e.Version, e.CreatedAt, e.UpdatedAt, e.LastAccessedAt,
		e.AccessCount, expires, nullString(e.Tier), nullInt(e.SourceTurn), nullString(e.SourceRunID),
		vec, nullString(e.EmbeddingModel), nullString(e.SourceConversation), dims, lexTerms, lexFreqs, lexLength,
	}
}

// scanEntry reads one row of entryColumns (or entrySelectColumns).
func scanEntry(row pgx.Row) (core.Entry, error) {
	var (
		e                           core.Entry
		kind                        string
		turn, idx, sourceTurn       *int
		value, metadata             []byte
		created, updated, accessed  time.Time
		expires                     *time.Time
		tier, sourceRunID, embModel *string
		vec                         *pgvector.Vector
		sourceConv, supConv         *string
		supValue                    []byte
		supTurn                     *int
	)
	err := row.Scan(&e.Tenant, &e.MemoryID, &e.Namespace, &e.ID, &kind, &turn, &idx, &value,
		&metadata, &e.Version, &created, &updated, &accessed, &e.AccessCount, &expires, &tier,
		&sourceTurn, &sourceRunID, &vec, &embModel, &sourceConv, &supValue, &supConv, &supTurn)
	if err != nil {
		return core.Entry{}, err
	}
	e.Kind = core.EntryKind(kind)
	e.Turn, e.Index, e.SourceTurn = deref(turn), deref(idx), deref(sourceTurn)
	e.Value, e.Metadata = value, metadata
	e.CreatedAt, e.UpdatedAt, e.LastAccessedAt = created.UTC(), updated.UTC(), accessed.UTC()
	if expires != nil {
		e.ExpiresAt = expires.UTC()
	}
	e.Tier, e.SourceRunID, e.EmbeddingModel = deref(tier), deref(sourceRunID), deref(embModel)
	if vec != nil {
		e.Embedding = vec.Slice()
	}
	e.SourceConversation = deref(sourceConv)
	if supValue != nil {
		e.Supersedes = &core.Superseded{Value: supValue, Conversation: deref(supConv), Turn: deref(supTurn)}
	}
	return e, nil
}

// nullInt maps 0 (unset) to NULL.
func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}
