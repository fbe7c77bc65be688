-- +goose Up
-- Principal-scoped memories (a memory's `scope`): their entries live in the principal's
-- namespace, tenant/principal/_, written by turns of every conversation of that principal. No
-- new index is needed: entries_newest_idx (tenant, namespace, memory_id, kind, turn, idx) serves
-- a principal's namespace as it serves a conversation's, and forgetting a principal everywhere
-- scans the range of its conversations' namespaces (they share the prefix tenant/principal/,
-- and namespace is COLLATE "C", so the range is an index range of entries_newest_idx).
ALTER TABLE memories ADD COLUMN scope text NOT NULL DEFAULT 'conversation'
    CHECK (scope IN ('conversation', 'principal'));

-- The conversation whose turn wrote an entry of a principal-scoped memory (NULL in a
-- conversation's own namespace, where the namespace says it).
ALTER TABLE entries ADD COLUMN source_conversation text;

-- What a fact replaced when it was last restated (a fact is upserted by key): the statement
-- and where it came from, so that evidence can show both. Set by the upsert, NULL otherwise.
ALTER TABLE entries ADD COLUMN superseded_value jsonb;
ALTER TABLE entries ADD COLUMN superseded_conversation text;
ALTER TABLE entries ADD COLUMN superseded_turn integer;

-- +goose Down
ALTER TABLE entries DROP COLUMN superseded_turn;
ALTER TABLE entries DROP COLUMN superseded_conversation;
ALTER TABLE entries DROP COLUMN superseded_value;
ALTER TABLE entries DROP COLUMN source_conversation;
ALTER TABLE memories DROP COLUMN scope;
