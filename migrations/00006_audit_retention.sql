-- +goose Up
-- The sweep deletes recall receipts and ablations older than the audit retention
-- (FOOTPRINT_RUN_RETENTION); these let it find them without scanning.
CREATE INDEX recalls_created_idx ON recalls (created_at);
CREATE INDEX ablations_created_idx ON ablations (created_at);

-- +goose Down
DROP INDEX IF EXISTS ablations_created_idx;
DROP INDEX IF EXISTS recalls_created_idx;
