package pg_test

import (
	"testing"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestReceiptBodiesCompressWithLZ4: migration 00018 stores receipt bodies with lz4 where this
// Postgres has it (pglz cost a fifth of a recall's Postgres CPU), and leaves pglz otherwise.
func TestReceiptBodiesCompressWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	_ = openStore(t, dsn) // migrates
	conn := connect(t, dsn)
	var hasLZ4 bool
	if err := conn.QueryRow(ctx, `SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&hasLZ4); err != nil {
		t.Fatal(err)
	}
	var method string
	if err := conn.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute WHERE attrelid = 'recalls'::regclass AND attname = 'body'`).Scan(&method); err != nil {
		t.Fatal(err)
	}
	want := ""
	if hasLZ4 {
		want = "l"
	}
	if method != want {
		t.Errorf("recalls.body compression = %q, want %q (lz4 available: %v)", method, want, hasLZ4)
	}
}
