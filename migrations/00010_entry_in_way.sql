-- +goose Up
-- A turn's entries are written by one INSERT ... ON CONFLICT on the primary key
-- (internal/store/pg/entries.go, insertEntriesSQL): an EXPIRED row of the same id is invisible
-- and is replaced in place; a LIVE one must fail the whole write, as a plain INSERT's
-- primary-key violation would. This function is how: the conflict branch calls it only when the
-- row in the way is live, and it raises the very error a plain INSERT raises (unique_violation
-- on entries_pkey), so callers see one error for "a live entry is in the way".
--
-- It replaces a separate DELETE of expired rows before each turn's INSERTs, whose plan depended
-- on table statistics: with stale statistics (a table that grew from empty faster than
-- autovacuum analyses it) pgx's cached generic plan scanned the whole namespace, 2.7 ms a turn.
-- The ON CONFLICT arbiter is always the primary key; there is no plan to go wrong.
-- VOLATILE (the default), so the planner never evaluates it ahead of time.
-- +goose StatementBegin
-- Its DETAIL names the entry as the API reports it, since one INSERT writes several rows.
CREATE FUNCTION footprint_entry_in_way(memory_id text, entry_id text) RETURNS text
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'entries_pkey', TABLE = 'entries',
              DETAIL = format('entry "%s" of memory "%s" already exists and is live',
                              entry_id, memory_id);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION footprint_entry_in_way(text, text);
