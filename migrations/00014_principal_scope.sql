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

-- A conversation's turns kept in its principal's namespace number the conversation too: a turn
-- write reads the highest of them with one probe per (memory, kind) of this index, walking the
-- conversation's own rows there from the highest turn down, whatever the principal's other
-- conversations hold. Partial: only principal-scoped entries carry a source conversation.
CREATE INDEX entries_principal_turns_idx ON entries
    (tenant, namespace, source_conversation, memory_id, kind, turn DESC NULLS LAST)
    WHERE source_conversation IS NOT NULL;

-- +goose Down
DROP INDEX entries_principal_turns_idx;
ALTER TABLE entries DROP COLUMN superseded_turn;
ALTER TABLE entries DROP COLUMN superseded_conversation;
ALTER TABLE entries DROP COLUMN superseded_value;
ALTER TABLE entries DROP COLUMN source_conversation;
ALTER TABLE memories DROP COLUMN scope;
