-- +goose Up
-- Run recordings decide repeats on the payload AS SENT and carry the server's own times
-- (internal/store/pg/runs.go, internal/core/runs).
--
-- run_events.identity: the SHA-256 of the canonical value of an announcement's payload as sent
-- (runs.ValueDigest), set only when the stored payload is not all of it (its embedding vectors
-- summarised as {dims, norm}, or truncated). Without it, two announcements differing only in
-- their vectors were one repeat, since both redact to the same summary. NULL: the stored
-- payload is the payload as sent (every row written before this migration).
--
-- run_events.received_at and runs.last_received_at: when the server received the event (the
-- newest event), by its own clock, beside the client's meta.wallClockMs. NULL for rows written
-- before this migration: unknown, and reported as absent. Plain columns added without a
-- default: no table rewrite.
ALTER TABLE run_events ADD COLUMN identity bytea;
ALTER TABLE run_events ADD COLUMN received_at timestamptz;
ALTER TABLE runs ADD COLUMN last_received_at timestamptz;

-- +goose Down
ALTER TABLE runs DROP COLUMN IF EXISTS last_received_at;
ALTER TABLE run_events DROP COLUMN IF EXISTS received_at;
ALTER TABLE run_events DROP COLUMN IF EXISTS identity;
