-- +goose Up
-- Recall receipts are written on every recall (12-40 KB of evidence each) and read back whole,
-- rarely, and never queried inside. As jsonb, Postgres parsed every one into its binary form
-- and compressed it with pglz; measured here for a 29 KB receipt, an INSERT took p50 0.33 ms as
-- jsonb, 0.23 ms as bytea (pglz) and 0.13 ms as bytea with lz4. The service still writes valid
-- JSON (core.RecallResult) and decodes it on read.
-- The type change rewrites the table under an exclusive lock: on a large recalls table, run it
-- in a quiet moment (receipts older than FOOTPRINT_RUN_RETENTION are swept anyway).
ALTER TABLE recalls ALTER COLUMN body TYPE bytea USING convert_to(body::text, 'UTF8');
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'lz4 is not available in this Postgres build; receipts keep the default compression';
END $$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION default;
ALTER TABLE recalls ALTER COLUMN body TYPE jsonb USING convert_from(body, 'UTF8')::jsonb;
