-- +goose Up
-- Citus (docs/scale-out.md): on a database with the citus extension, every tenant-owned table is
-- distributed by `tenant`, all co-located with memories, so that everything a request touches
-- for one tenant lives on one shard group of one worker and is reached by single-shard (router)
-- statements; a table without a tenant column would be a reference table (there is none). On
-- plain Postgres this migration only replaces two functions, and nothing else changes.

-- footprint_entry_in_way (migrations 00010, 00013) is called from the DO UPDATE SET of
-- insertEntriesSQL, and Citus refuses any function there that is not IMMUTABLE ("functions used
-- in the DO UPDATE SET clause of INSERTs on distributed tables must be marked IMMUTABLE"). It
-- is declared so here, in its definition, since CREATE OR REPLACE resets what it omits: a later
-- migration that re-creates it must say IMMUTABLE too. The label is safe: its arguments are
-- always EXCLUDED columns, never constants, so the planner can never evaluate it ahead of time,
-- and it is only ever reached on a live row in the way. Body as in 00013.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION footprint_entry_in_way(memory_id text, entry_id text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'entries_pkey', TABLE = 'entries',
              DETAIL = format('entry "%s" of memory "%s" already exists and is live',
                              entry_id, memory_id),
              HINT = json_build_object('memoryId', memory_id, 'entryId', entry_id)::text;
END
$$;
-- +goose StatementEnd

-- The set union of two text arrays, for turn_links' ON CONFLICT DO UPDATE SET
-- (internal/store/pg/explain.go): Citus refuses a subquery there ("subqueries are not supported
-- within INSERT queries"), which the union spelt inline was; inside a function it is not one.
CREATE FUNCTION footprint_union(a text[], b text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY(SELECT DISTINCT unnest(a || b)) $$;

-- footprint_distribute() distributes what is not yet distributed, and returns how many tables it
-- distributed: 0, doing nothing, without the citus extension. It is also THE command that
-- distributes an existing single-node database once Citus is installed and the workers are
-- added (docs/scale-out.md): SELECT footprint_distribute(); on the coordinator. It distributes
-- every table of the current schema that has a tenant column (memories first, with a colocation
-- group of its own, then the others co-located with it), makes any other table except goose's
-- version table a reference table, and marks the functions that shards' statements call as
-- distributed, which creates them on every node. Tables with rows are copied into their shards
-- (writes to a table wait while it is copied), and the coordinator's local copy is emptied.
-- citus.shard_count decides the number of shards (32 by default). The store runs it after every
-- migration run on a distributed database, so that tables added by later migrations are
-- distributed too.
-- +goose StatementBegin
CREATE FUNCTION footprint_distribute() RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    t regclass;
    has_rows boolean;
    n integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN 0;
    END IF;
    -- Two callers at once (replicas starting together) distribute each table once.
    PERFORM pg_advisory_xact_lock(hashtextextended('footprint_distribute', 0));
    -- One connection per worker for the rest of the transaction: Citus refuses DDL on a table
    -- after a parallel (multi-connection) operation on another in the same transaction.
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    PERFORM create_distributed_function('footprint_entry_in_way(text, text)');
    PERFORM create_distributed_function('footprint_union(text[], text[])');
    FOR t IN
        SELECT c.oid::regclass
        FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND s.nspname = current_schema()
            AND c.relname <> 'goose_db_version'
            AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)
        -- memories first: the others are co-located with it
        ORDER BY c.relname <> 'memories', c.relname
    LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', t) INTO has_rows;
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = t AND attname = 'tenant' AND NOT attisdropped) THEN
            PERFORM create_reference_table(t);
        ELSIF t = 'memories'::regclass THEN
            PERFORM create_distributed_table(t, 'tenant', colocate_with => 'none');
        ELSE
            PERFORM create_distributed_table(t, 'tenant', colocate_with => 'memories');
        END IF;
        IF has_rows THEN
            PERFORM truncate_local_data_after_distributing_table(t);
        END IF;
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
-- +goose StatementEnd

SELECT footprint_distribute();

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t regclass;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
        FOR t IN SELECT logicalrelid FROM pg_dist_partition
                 WHERE logicalrelid::text <> 'memories' ORDER BY logicalrelid::text LOOP
            PERFORM undistribute_table(t);
        END LOOP;
        IF to_regclass('memories') IN (SELECT logicalrelid FROM pg_dist_partition) THEN
            PERFORM undistribute_table('memories');
        END IF;
    END IF;
END
$$;
-- +goose StatementEnd
DROP FUNCTION footprint_distribute();
DROP FUNCTION footprint_union(text[], text[]);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION footprint_entry_in_way(memory_id text, entry_id text) RETURNS text
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'duplicate key value violates unique constraint "entries_pkey"'
        USING ERRCODE = 'unique_violation', CONSTRAINT = 'entries_pkey', TABLE = 'entries',
              DETAIL = format('entry "%s" of memory "%s" already exists and is live',
                              entry_id, memory_id),
              HINT = json_build_object('memoryId', memory_id, 'entryId', entry_id)::text;
END
$$;
-- +goose StatementEnd
