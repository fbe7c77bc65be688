-- +goose NO TRANSACTION
-- +goose Up
-- Lexical ranking (topK `ranking: "lexical"` or `"hybrid"`): what each ranked entry keeps of
-- its text, the term statistics of corpora, and the index that finds a corpus's candidates.
--
-- The terms are decided in Go (core.Terms: runs of letters, digits and marks, lower-cased),
-- never by a Postgres text-search configuration, so that both stores split text alike and the
-- in-memory store can be the reference. Each ranked entry (a message of a semantic topK
-- memory, a causal snapshot, a corpus chunk) stores its distinct terms in byte order, each
-- term's frequency at the same position, and its length in terms. NULL: the entry was written
-- before this migration, or has no words; it scores 0 lexically and counts in no statistics.
ALTER TABLE entries
    ADD COLUMN IF NOT EXISTS lex_terms  text[],
    ADD COLUMN IF NOT EXISTS lex_freqs  smallint[],
    ADD COLUMN IF NOT EXISTS lex_length integer CHECK (lex_length > 0);

-- A conversation's statistics (how many of its entries hold each query term, their mean
-- length) are computed by the ranking statement itself, over the rows the exact scan reads
-- anyway (pg/recall.go, exactRankSQL): always consistent with what is live, nothing to keep
-- on the turn-write path. A corpus is too large for that: counting the entries that hold
-- "the" in 100k chunks costs more than the search. Its statistics are kept here, inside the
-- transaction that replaces documents (PutDocuments), and removed with the corpus.
CREATE TABLE IF NOT EXISTS lexical_terms (
    tenant    text    NOT NULL,
    memory_id text    COLLATE "C" NOT NULL,
    namespace text    COLLATE "C" NOT NULL,
    term      text    COLLATE "C" NOT NULL,
    df        integer NOT NULL, -- entries holding the term (deltas are added, so no CHECK: see PutDocuments)
    PRIMARY KEY (tenant, memory_id, namespace, term)
);
CREATE TABLE IF NOT EXISTS lexical_totals (
    tenant    text   NOT NULL,
    memory_id text   COLLATE "C" NOT NULL,
    namespace text   COLLATE "C" NOT NULL,
    docs      bigint NOT NULL, -- entries with terms
    length    bigint NOT NULL, -- their total length in terms
    PRIMARY KEY (tenant, memory_id, namespace)
);

-- The candidate generator of a corpus's lexical search: the chunks holding any of the query's
-- rarer terms (lex_terms && ARRAY[...]), re-scored exactly. Partial to corpus chunks, like the
-- HNSW index: per-conversation rankings are exact scans of a b-tree-selected set and never
-- need it, and a GIN index maintained on every turn write would only cost. Built CONCURRENTLY
-- (see 00011) so that adding it locks no writer out.
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_lex;
CREATE INDEX CONCURRENTLY entries_doc_lex ON entries USING gin (lex_terms) WHERE kind = 'doc';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_lex;
DROP TABLE IF EXISTS lexical_totals;
DROP TABLE IF EXISTS lexical_terms;
ALTER TABLE entries DROP COLUMN IF EXISTS lex_length, DROP COLUMN IF EXISTS lex_freqs, DROP COLUMN IF EXISTS lex_terms;
