-- +goose Up
-- Run recordings (internal/store/pg/runs.go): one row per run holding the state of its bounded
-- event tail, and one row per RETAINED event. Postgres is the source of truth: an acknowledged
-- batch is committed here before the 2xx; process-local tails are only a cache of these rows.
CREATE TABLE runs (
    tenant            text NOT NULL,
    id                text COLLATE "C" NOT NULL,
    namespace         text COLLATE "C" NOT NULL,  -- enc(tenant)/enc(principal)/enc(conversation)
    conversation_id   text,
    principal         text,
    turn              integer,
    max_events        integer NOT NULL,
    record_embeddings boolean NOT NULL,
    finished          boolean NOT NULL DEFAULT false,
    complete          boolean NOT NULL DEFAULT false,
    started_at        timestamptz,                -- the caller's, else the first event's wall clock
    last_wall_at      timestamptz,                -- the newest event's wall clock
    finished_at       timestamptz,
    next_index        bigint NOT NULL DEFAULT 0,  -- the stream's length
    dropped           bigint NOT NULL DEFAULT 0,  -- evicted events == first retained index
    truncated_events  bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX runs_recent_idx ON runs (tenant, created_at DESC, id DESC);
CREATE INDEX runs_namespace_idx ON runs (tenant, namespace, created_at DESC, id DESC);
CREATE INDEX runs_open_idx ON runs (tenant) WHERE NOT finished;
CREATE INDEX runs_finished_idx ON runs (finished_at) WHERE finished;

-- The retained window of each run: idx from runs.dropped to runs.next_index - 1, contiguous.
-- payload and meta are the JSON text as recorded (bytea, not jsonb: key order and spelling are
-- part of a payload's identity). No foreign key: appends are the hot path, and the only writer
-- of both tables (the store) deletes a run's events with the run.
CREATE TABLE run_events (
    tenant         text NOT NULL,
    run_id         text COLLATE "C" NOT NULL,
    idx            bigint NOT NULL,
    type           text NOT NULL,
    payload        bytea NOT NULL,
    meta           bytea,
    slot           boolean NOT NULL,              -- false: a repeat announcement
    original_bytes bigint,                        -- set when the payload was truncated
    sha256         text,
    PRIMARY KEY (tenant, run_id, idx)
);

-- +goose Down
DROP TABLE IF EXISTS run_events;
DROP TABLE IF EXISTS runs;
