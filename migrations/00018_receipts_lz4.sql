-- +goose Up
-- A recall's receipt body (recalls.body) is about 16 KB of JSON for a conversation's top 10,
-- which Postgres compresses when it stores it (to about 3.5 KB). Its default method, pglz,
-- cost a fifth of the Postgres CPU of a recall at 16 clients; lz4 compresses the same bodies
-- in a fraction of it (bench/recall -concurrent -receipt-compression pglz,lz4: the Postgres
-- CPU per recall 1.10 → 0.94 ms, docs/benchmarks.md). Only new rows take the method: nothing
-- is rewritten. A Postgres built without lz4 keeps pglz.
-- +goose StatementBegin
DO $$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
		ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION lz4;
	END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION DEFAULT;
