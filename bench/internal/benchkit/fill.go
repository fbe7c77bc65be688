package benchkit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FillEntries adds rows to the entries table until it holds at least target rows: other
// tenants' conversations (100 messages each, memory "filler", a 384-d vector on every row, as a
// semantic memory keeps them), so that a benchmark's own tenant is a small part of a large
// table. Rows are inserted 50,000 per statement. It returns the table's row count after.
func FillEntries(ctx context.Context, pool *pgxpool.Pool, target int64) (int64, error) {
	var have int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM entries`).Scan(&have); err != nil {
		return 0, err
	}
	// One vector for every filler row: its contents do not matter to a benchmark that never ranks
	// the filler, its size does (the rows' width, the table's pages).
	vals := make([]string, 384)
	for i := range vals {
		vals[i] = fmt.Sprintf("%.4f", float64((i*37)%101)/101)
	}
	vec := "[" + strings.Join(vals, ",") + "]"
	const batch = 50_000
	for have < target {
		n := min(int64(batch), target-have)
		_, err := pool.Exec(ctx, `INSERT INTO entries (tenant, memory_id, namespace, id, kind, turn, idx, value,
				created_at, updated_at, last_accessed_at, source_turn, embedding, embedding_model, embedding_dims)
			SELECT 'filler-' || ((g / 100) % 97), 'filler', 'filler-' || ((g / 100) % 97) || '/_/c' || (g / 100),
				'msg-' || (g % 100 / 2 + 1) || '-' || (g % 2), 'msg', g % 100 / 2 + 1, g % 2,
				'{"role":"user","content":"a message of another tenant, here to make the table large"}',
				now(), now(), now(), g % 100 / 2 + 1, $3::vector, 'footprint-hash-v1', 384
			FROM generate_series($1::bigint, $2::bigint) g`, have, have+n-1, vec)
		if err != nil {
			return have, fmt.Errorf("fill entries: %w", err)
		}
		have += n
	}
	if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) entries`); err != nil {
		return have, err
	}
	return have, nil
}

// ParseSizes reads a comma-separated list of ascending positive row counts ("10000,100000").
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || n < 1 || len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("%q is not a list of ascending positive row counts", s)
		}
		out = append(out, n)
	}
	return out, nil
}
