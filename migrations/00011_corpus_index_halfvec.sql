-- +goose NO TRANSACTION
-- +goose Up
-- The corpus HNSW index holds half-precision copies of the vectors, in a denser graph.
-- Measured on 100k chunks of real text embedded with the built-in 384-d lexical embedder
-- (bench/recall's corpus, 400 held-out sentences as queries, every variant run interleaved on
-- the same queries; LIMIT 20, hnsw.iterative_scan off):
--
--   index                              ef_search  recall@10  p50 ms  p99 ms
--   vector   m 24, ef_construction 128    300       0.963    10.7    16.3
--   halfvec  m 24, ef_construction 128    260       0.950     7.1    12.3
--   halfvec  m 32, ef_construction 256    200       0.958     7.9    12.0
--
-- The search's time goes to loading graph elements (buffer lookups and copying each visited
-- vector), not to distances: an element of 384 halves is 768 bytes against 1,536, so each hop
-- costs less, and the denser graph (m 32: up to 64 neighbours per node on the ground layer)
-- reaches the same recall visiting fewer of them. Lexical vectors have many near-ties, which a
-- sparse graph navigates poorly.
--
-- Only the index is approximate: the stored vectors stay single precision, and the score a
-- recall reports is computed from them (annRankSQL), so half precision can reorder nothing the
-- client sees; it only decides which candidates the graph walk finds.
--
-- The cost is on the write side: a chunk insert searches the graph with ef_construction 256
-- and updates up to 64 neighbours (bench/recall prints the insert rate).
--
-- Built CONCURRENTLY, under another name, and swapped in: a plain CREATE INDEX would lock the
-- entries table against every write (turns included) for the whole build, which on a large
-- corpus takes minutes (with the default maintenance_work_mem the graph does not fit in memory
-- and pgvector inserts row by row: about 10 minutes per 100k chunks on a 2-core machine).
-- Replicas of the previous version keep serving meanwhile, their corpus recalls on the old
-- index (their query spells its expression) until it is dropped, then as exact scans (correct,
-- slow) until they are upgraded. Replicas of this version starting during the build wait for
-- the migration lock for up to 5 minutes (internal/store/pg/migrate.go): on a large corpus,
-- upgrade one replica first. The first statement drops what an interrupted run left (an
-- invalid index under the temporary name).
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_hnsw_384_next;
CREATE INDEX CONCURRENTLY entries_doc_hnsw_384_next ON entries
    USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WITH (m = 32, ef_construction = 256)
    WHERE kind = 'doc' AND embedding_dims = 384;
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_hnsw_384;
ALTER INDEX entries_doc_hnsw_384_next RENAME TO entries_doc_hnsw_384;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_hnsw_384_next;
CREATE INDEX CONCURRENTLY entries_doc_hnsw_384_next ON entries
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 24, ef_construction = 128)
    WHERE kind = 'doc' AND embedding_dims = 384;
DROP INDEX CONCURRENTLY IF EXISTS entries_doc_hnsw_384;
ALTER INDEX entries_doc_hnsw_384_next RENAME TO entries_doc_hnsw_384;
