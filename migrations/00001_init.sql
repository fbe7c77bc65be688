-- 00001_init: pgvector, memory definitions, conversations, entries, embedding fingerprints and
-- idempotency keys.
--
-- Conventions that hold for every table here and in later migrations:
--
-- * Tenant first in every primary key and every index. Everything a tenant owns is found
--   through its tenant, so the schema can be distributed by tenant on Citus
--   (create_distributed_table(..., 'tenant')) when one server is not enough: Citus requires the
--   distribution column in every primary key and unique constraint, and tenant-first indexes
--   keep every query on a single shard.
-- * No foreign keys between tenant tables. Entries outlive a non-purging DeleteMemory by design
--   (a memory re-created with the same id sees them again, as in the library footprint mirrors),
--   corpus documents have no conversation row, and Citus only enforces foreign keys between
--   co-located tables anyway. Integrity is kept by the store, inside its transactions.
-- * Ids that clients page through are COLLATE "C": byte order, so `id > $after ORDER BY id`
--   pages identically on every server whatever its default collation, matches Go's string
--   order (the in-memory store) and compares faster than a linguistic collation.
-- * Optional values are NULL, never '' or 0, so "not set" is unambiguous in SQL.
-- * Timestamps are timestamptz (microsecond precision); the application supplies them so that
--   both stores agree on them, except bookkeeping columns that only the database reads.
--
-- Later migrations add runs and their event tails, recall receipts (the evidence the explain
-- endpoint walks back through), and ANN indexes for large corpora (see the note on entries).

-- +goose Up

-- pgvector comes first: later migrations use the vector type, and the Go store registers the
-- vector codecs on every new connection, which fails if the type does not exist.
CREATE EXTENSION IF NOT EXISTS vector;

-- memories: memory definitions ({id, type, strategy, ...}), one row per (tenant, id).
CREATE TABLE memories (
    tenant      text   NOT NULL,
    id          text   COLLATE "C" NOT NULL,
    type        text   NOT NULL CHECK (type IN ('episodic', 'semantic', 'narrative', 'causal')),
    -- The strategy exactly as core.Strategy marshals it. jsonb rather than columns because a
    -- strategy is a tagged union with a recursive case (hybrid), and the store never queries
    -- inside it: it is validated by core on the way in and rehydrated by core on the way out.
    strategy    jsonb  NOT NULL,
    description text   NOT NULL DEFAULT '',
    read_only   boolean NOT NULL DEFAULT false,
    ttl_ms      bigint CHECK (ttl_ms > 0),                       -- NULL: entries never expire
    tier        text   CHECK (tier IN ('hot', 'warm', 'cold')),   -- NULL: no tier
    embedder    text,                                            -- NULL: deployment default
    projection  text,                                            -- causal memories only
    corpus      boolean NOT NULL DEFAULT false,
    flavor      text   NOT NULL,
    -- version is the definition's optimistic-concurrency counter: 1 on create, +1 per replace.
    -- The store persists what the domain sets; it never bumps it itself.
    version     bigint NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- Serves GetMemory and ListMemories (tenant = $1 AND id > $2 ORDER BY id LIMIT $3) with an
    -- index range scan that stops after LIMIT rows.
    PRIMARY KEY (tenant, id)
);

-- conversations: one row per namespace a tenant has written to. The row is the lock that
-- serialises turn writes: a turn write upserts it and takes it FOR UPDATE before deriving its
-- turn number (max live snap-{n} + 1), so two concurrent posts to one conversation get
-- distinct turns while posts to different conversations never wait for each other. A row lock
-- rather than pg_advisory_xact_lock because it needs no hashing of text into a 64-bit key (no
-- collisions across tenants), and it is visible in pg_locks by name.
CREATE TABLE conversations (
    tenant     text NOT NULL,
    namespace  text COLLATE "C" NOT NULL,   -- core.Identity.Namespace(), already injective
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, namespace)
);

-- entries: every stored item, for every memory and namespace: messages (msg-{turn}-{i}),
-- causal snapshots (snap-{turn}), facts (fact:{key}), narrative beats (beat-{turn}-{i}),
-- summaries (msg-summary-{from}-{to}) and corpus document chunks.
CREATE TABLE entries (
    tenant           text   NOT NULL,
    memory_id        text   COLLATE "C" NOT NULL,
    namespace        text   COLLATE "C" NOT NULL,
    id               text   COLLATE "C" NOT NULL,
    kind             text   NOT NULL CHECK (kind IN ('msg', 'snap', 'fact', 'beat', 'summary', 'doc')),
    -- turn and idx are parsed from the id when the entry is written (snap-{n}: turn n;
    -- msg-{n}-{i} and beat-{n}-{i}: turn n, idx i), so that "newest first" and "highest live
    -- snapshot" are integer comparisons served by entries_newest_idx. Comparing ids as text
    -- would put snap-10 before snap-9. NULL for kinds without a turn (facts, documents).
    turn             integer CHECK (turn >= 1),
    idx              integer CHECK (idx >= 0),
    value            jsonb  NOT NULL,
    metadata         jsonb  NOT NULL DEFAULT '{}',
    version          bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    last_accessed_at timestamptz NOT NULL,
    access_count     bigint NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    -- Absolute expiry (the entry's ttl). An expired entry is invisible to every read and scan,
    -- including the turn-number derivation: every query filters
    -- (expires_at IS NULL OR expires_at > $now). Rows are swept lazily; correctness never
    -- depends on the sweep.
    expires_at       timestamptz,
    tier             text   CHECK (tier IN ('hot', 'warm', 'cold')),
    source_turn      integer,            -- the turn that wrote this entry (the explain backtrack)
    source_run_id    text,               -- the run that wrote it, when the agent named one
    -- Unconstrained vector: one column holds every embedder's dimensions. Vectors of different
    -- models or dimensions are never compared (embedding_fingerprints makes that an error on
    -- write); queries filter on embedding_dims and embedding_model, never rank across them.
    embedding        vector,
    embedding_model  text,
    embedding_dims   integer CHECK (embedding_dims > 0),
    CHECK ((embedding IS NULL) = (embedding_dims IS NULL)),
    CHECK (embedding IS NULL OR vector_dims(embedding) = embedding_dims),
    -- Point reads (one entry of one memory) and DeleteMemory(purge), which erases every
    -- entry of a memory by the (tenant, memory_id) prefix.
    PRIMARY KEY (tenant, memory_id, namespace, id)
);

-- Newest first within one memory's namespace and kind: recall windows (last N messages),
-- max live snap-{n} for the turn number, and the entries listing. Queries must spell the same
-- ordering, ORDER BY turn DESC NULLS LAST, idx DESC NULLS LAST, to be served by an index scan
-- without a sort. Leading with (tenant, namespace) also serves "forget a conversation"
-- (DELETE ... WHERE tenant = $1 AND namespace = $2 across every memory), which the primary key
-- cannot serve because memory_id precedes namespace there.
CREATE INDEX entries_newest_idx
    ON entries (tenant, namespace, memory_id, kind, turn DESC NULLS LAST, idx DESC NULLS LAST);

-- No ANN (HNSW) index on per-conversation entries, deliberately. Similarity scans here are
-- filtered to one (tenant, memory_id, namespace), which holds tens to hundreds of vectors: the
-- b-tree narrows to them and an exact scan ranks them faster than an approximate index would,
-- with exact results. Maintaining an HNSW graph on every insert measured at a tenfold slowdown
-- of turn writes.
--
-- ANN indexes are for large corpora (kind = 'doc', thousands of chunks and up) and belong to a
-- later migration. HNSW needs a fixed dimension, so there is one partial expression index per
-- dimension in use, for example:
--
--   CREATE INDEX entries_doc_hnsw_384 ON entries
--       USING hnsw ((embedding::vector(384)) vector_cosine_ops)
--       -- m: graph degree (links per node). 16 is pgvector's default: higher improves recall on
--       --    large sets at the cost of memory and build time.
--       -- ef_construction: candidate list size while building. 64 (the default) balances build
--       --    time against graph quality; it must be at least 2 * m.
--       WITH (m = 16, ef_construction = 64)
--       WHERE kind = 'doc' AND embedding_dims = 384;
--
-- vector_cosine_ops because embeddings are compared by cosine similarity; queries must repeat
-- the cast and the predicate (ORDER BY embedding::vector(384) <=> $q ... WHERE embedding_dims =
-- 384) for the planner to choose the index, and set hnsw.ef_search per query for recall.

-- embedding_fingerprints: the embedder (model and dimensions) a memory's namespace was first
-- written with. Later writes with another model or dimension are refused (an error, not a
-- silent mis-ranking), and recall records the mismatch as evidence. Keyed like entries, minus
-- the entry id; erased with the memory's entries on DeleteMemory(purge) and with the
-- namespace on forget.
CREATE TABLE embedding_fingerprints (
    tenant     text    NOT NULL,
    memory_id  text    COLLATE "C" NOT NULL,
    namespace  text    COLLATE "C" NOT NULL,
    model      text    NOT NULL,
    dims       integer NOT NULL CHECK (dims > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, memory_id, namespace)
);

-- idempotency_keys: Idempotency-Key on creating POSTs. The intended protocol: a request claims
-- (tenant, key) by inserting a row with a hash of its method, path and body and a NULL status
-- (INSERT ... ON CONFLICT DO NOTHING decides the race); on completion status and response are
-- filled in. A retry with the same key and hash replays the response, one with a different
-- hash is refused, and one that finds the status still NULL knows the first is in flight.
CREATE TABLE idempotency_keys (
    tenant       text  NOT NULL,
    key          text  NOT NULL,
    request_hash bytea NOT NULL,
    status       integer,   -- NULL: in flight
    response     bytea,     -- the response body to replay, set together with status
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant, key)
);

-- The expiry sweep deletes across tenants (DELETE ... WHERE expires_at < now()), so this
-- index is deliberately not tenant-first. On Citus it is built per shard and the sweep fans
-- out, which is what a sweep should do.
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE IF EXISTS idempotency_keys;
DROP TABLE IF EXISTS embedding_fingerprints;
DROP TABLE IF EXISTS entries;
DROP TABLE IF EXISTS conversations;
DROP TABLE IF EXISTS memories;
-- The extension is left in place: other schemas in the same database may use it, and
-- dropping it needs more privileges than creating it.
