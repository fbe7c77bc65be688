-- +goose Up
-- Partial b-tree indexes that let the periodic sweep (pg.Store.Sweep) find expired rows without
-- scanning the tables. Partial on entries: most entries never expire, and rows without a ttl
-- cost this index nothing on the turn-write path.
CREATE INDEX entries_expiry_idx ON entries (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);

-- +goose Down
DROP INDEX IF EXISTS idempotency_keys_expiry_idx;
DROP INDEX IF EXISTS entries_expiry_idx;
