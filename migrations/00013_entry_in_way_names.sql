-- +goose Up
-- footprint_entry_in_way (migration 00010) named the entry in the way only in its DETAIL text,
-- which the store then passed to clients as it was. The store now reads the entry from the
-- error's HINT, a JSON object {"memoryId": …, "entryId": …} that only this function writes,
-- and writes the client's message itself; no text of the error reaches a client.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION footprint_entry_in_way(memory_id text, entry_id text) RETURNS text
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'entries_pkey', TABLE = 'entries',
              DETAIL = format('entry "%s" of memory "%s" already exists and is live',
                              entry_id, memory_id),
              HINT = json_build_object('memoryId', memory_id, 'entryId', entry_id)::text;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION footprint_entry_in_way(memory_id text, entry_id text) RETURNS text
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'entries_pkey', TABLE = 'entries',
              DETAIL = format('entry "%s" of memory "%s" already exists and is live',
                              entry_id, memory_id);
END
$$;
-- +goose StatementEnd
