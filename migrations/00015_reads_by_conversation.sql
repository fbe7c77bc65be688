-- +goose Up
-- Reading receipts and runs by conversation and turn, for frontends (internal/store/pg/read.go): a conversation's
-- receipts newest first (listRecalls), and the receipts that admitted one entry (getEntryUsage).
--
-- admitted holds the injection id (memory:<memoryId>#<entryId>) of every entry the receipt
-- admitted, written with the receipt (recall.RecallResult.AdmittedIDs): the receipts that
-- admitted an entry are found by `admitted @> ARRAY[$id]` without reading any body, whose
-- evidence is 12-40 KB of compressed JSON. An array in the row rather than a table of
-- (receipt, entry) rows: a recall writes one row and maintains no second table's indexes, and
-- the query reads one conversation's receipts through recalls_namespace_idx, checking each
-- row's array (a few dozen ids, stored in the row) and detoasting only the receipts it returns.
--
-- The backfill parses every stored receipt once and rewrites its row (the body's TOAST value
-- is kept, not rewritten). On a large recalls table it holds the table's lock for that long, as
-- 00008 did: run it in a quiet moment (receipts older than FOOTPRINT_RUN_RETENTION are swept
-- anyway).
ALTER TABLE recalls ADD COLUMN admitted text[] NOT NULL DEFAULT '{}';
UPDATE recalls SET admitted = ARRAY(
    SELECT 'memory:' || (m.value ->> 'memoryId') || '#' || (c.value ->> 'id')
    FROM jsonb_array_elements(convert_from(body, 'UTF8')::jsonb -> 'memories') WITH ORDINALITY AS m(value, i),
         jsonb_array_elements(m.value -> 'evidence' -> 'candidates') WITH ORDINALITY AS c(value, j)
    WHERE (c.value ->> 'admitted')::boolean
    ORDER BY m.i, c.j);

-- A conversation's receipts, newest first: listRecalls pages with
-- (created_at, id) < ($after) ORDER BY created_at DESC, id DESC LIMIT n, a range scan that
-- stops after n rows. recalls_turn_idx still serves the receipts of one turn.
CREATE INDEX recalls_namespace_idx ON recalls (tenant, namespace, created_at DESC, id DESC);

-- The runs opened for a turn of a conversation (listTurns, getTurn): a run's turn is in its row
-- only, so without this the query read every run of the conversation (runs_namespace_idx).
-- One entry per run opened, never touched by its events.
CREATE INDEX runs_turn_idx ON runs (tenant, namespace, turn) WHERE turn IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS runs_turn_idx;
DROP INDEX IF EXISTS recalls_namespace_idx;
ALTER TABLE recalls DROP COLUMN IF EXISTS admitted;
