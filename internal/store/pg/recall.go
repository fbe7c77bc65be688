package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
)

var _ core.RecallStore = (*Store)(nil)

// annDims are the dimensions that have an HNSW index for corpora (migration 00003).
var annDims = map[int]bool{384: true}

// corpusNamespace is where a corpus memory's document chunks live: tenant-wide, and never a
// conversation's namespace (those always contain '/').
const corpusNamespace = ""

// maxMismatched bounds how many entries of another vector space are reported per ranking.
const maxMismatched = 50

// RankEntries ranks one memory's live entries by cosine similarity. Within a conversation it
// is an exact scan: the b-tree on (tenant, namespace, memory_id, kind, ...) selects the
// conversation's rows and every one is scored (Mode "exact"). A corpus at an indexed
// dimension is searched through its HNSW index with iterative scans (Mode "ann").
func (s *Store) RankEntries(ctx context.Context, q core.RankQuery) (core.RankResult, error) {
	kinds := make([]string, len(q.Kinds))
	for i, k := range q.Kinds {
		kinds[i] = string(k)
	}
	dims := len(q.Vector)
	vec := pgvector.NewVector(q.Vector)
	var res core.RankResult
	err := s.tx(ctx, func(t pgx.Tx) error {
		res = core.RankResult{Mode: "exact"}
		ann := q.Namespace == corpusNamespace && annDims[dims]
		exactSQL := `SELECT ` + entryColumns + `, 1 - (embedding <=> $6) AS score
			FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = ANY($4)
				AND (expires_at IS NULL OR expires_at > $5)
				AND embedding_dims = ` + fmt.Sprint(dims) + ` AND embedding_model = $7
			ORDER BY embedding <=> $6
			LIMIT $8`
		args := []any{q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model, q.Limit}
		if ann {
			// SET LOCAL: scoped to this transaction, so pooled connections keep their
			// defaults. enable_sort off makes the HNSW ordered scan the only plan, so
			// "ann" is what actually ran; iterative scans keep filtered results whole.
			for _, set := range []string{
				`SET LOCAL enable_sort = off`,
				`SET LOCAL hnsw.iterative_scan = relaxed_order`,
				`SET LOCAL hnsw.max_scan_tuples = 200000`,
				fmt.Sprintf(`SET LOCAL hnsw.ef_search = %d`, max(40, 2*q.Limit)),
			} {
				if _, err := t.Exec(ctx, set); err != nil {
					return err
				}
			}
			ranked, err := queryScored(ctx, t, annRankSQL(dims), args)
			if err != nil {
				return err
			}
			if len(ranked) >= q.Limit {
				res.Mode, res.Ranked = "ann", ranked
			} else {
				// Short: the memory's corpus is small (or the filter very selective).
				// An exact scan is cheap then, and never short.
				ann = false
				if _, err := t.Exec(ctx, `SET LOCAL enable_sort = on`); err != nil {
					return err
				}
			}
		}
		if !ann {
			ranked, err := queryScored(ctx, t, exactSQL, args)
			if err != nil {
				return err
			}
			res.Ranked = ranked
		}
		// relaxed_order may return neighbours slightly out of order: order them exactly.
		sort.SliceStable(res.Ranked, func(i, j int) bool { return res.Ranked[i].Score > res.Ranked[j].Score })
		if ann {
			// Counting a large corpus would cost more than the search itself; an
			// approximate search does not claim a complete candidate list anyway.
			res.Total = -1
		} else if err := t.QueryRow(ctx, `SELECT count(*) FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = ANY($4)
				AND (expires_at IS NULL OR expires_at > $5)
				AND embedding_dims = $6 AND embedding_model = $7`,
			q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, dims, q.Model).Scan(&res.Total); err != nil {
			return err
		}
		mm, err := t.Query(ctx, `SELECT `+entrySelectColumns(false)+` FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = ANY($4)
				AND (expires_at IS NULL OR expires_at > $5) AND embedding_dims IS NOT NULL
				AND (embedding_dims <> $6 OR embedding_model IS DISTINCT FROM $7)
			ORDER BY turn DESC NULLS LAST, idx DESC NULLS LAST, id DESC
			LIMIT $8`, q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, dims, q.Model, maxMismatched)
		if err != nil {
			return err
		}
		defer mm.Close()
		for mm.Next() {
			e, err := scanEntry(mm)
			if err != nil {
				return err
			}
			res.Mismatched = append(res.Mismatched, e)
		}
		return mm.Err()
	})
	if err != nil {
		return core.RankResult{}, translate(err, "rank entries", "", "")
	}
	return res, nil
}

// annRankSQL ranks a corpus through the HNSW index of its dimension: the ORDER BY spells the
// indexed expression (embedding::vector(dims)) and the WHERE implies the index predicate
// (kind = 'doc' AND embedding_dims = dims), or Postgres cannot use the index. dims is an int
// from the query vector's length, never user text.
func annRankSQL(dims int) string {
	return fmt.Sprintf(`SELECT %s, 1 - (embedding::vector(%d) <=> $6::vector(%d)) AS score
		FROM entries
		WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'doc'
			AND embedding_dims = %d AND embedding_model = $7
			AND (expires_at IS NULL OR expires_at > $5) AND kind = ANY($4)
		ORDER BY embedding::vector(%d) <=> $6::vector(%d)
		LIMIT $8`, entryColumns, dims, dims, dims, dims, dims)
}

// queryScored runs a ranking query and scans entries with their scores.
func queryScored(ctx context.Context, t pgx.Tx, sql string, args []any) ([]core.Scored, error) {
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []core.Scored
	for rows.Next() {
		var sc core.Scored
		e, err := scanEntry(scoreRow{rows, &sc.Score})
		if err != nil {
			return nil, err
		}
		sc.Entry = e
		out = append(out, sc)
	}
	return out, rows.Err()
}

// scoreRow appends the score column to a scan of entry columns.
type scoreRow struct {
	row   pgx.Row
	score *float64
}

func (r scoreRow) Scan(dest ...any) error { return r.row.Scan(append(dest, r.score)...) }

// SaveRecall stores a recall receipt.
func (s *Store) SaveRecall(ctx context.Context, tenant string, r core.RecallResult) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("marshal recall: %w", err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO recalls (tenant, id, namespace, turn, run_id, query_hash, created_at, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		tenant, r.RecallID, r.Identity.Namespace(), nullInt(r.Turn), nullString(r.RunID), r.QueryHash, r.CreatedAt, body)
	if err != nil {
		return translate(err, "save recall", "recall", r.RecallID)
	}
	return nil
}

// GetRecall reads a receipt back; ErrNotFound for an unknown id or another tenant's.
func (s *Store) GetRecall(ctx context.Context, tenant, id string) (core.RecallResult, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM recalls WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.RecallResult{}, &core.NotFoundError{What: "recall", ID: id}
	}
	if err != nil {
		return core.RecallResult{}, translate(err, "get recall", "recall", id)
	}
	var r core.RecallResult
	if err := json.Unmarshal(body, &r); err != nil {
		return core.RecallResult{}, fmt.Errorf("decode stored recall %q: %w", id, err)
	}
	return r, nil
}

// PutDocuments replaces the chunks of the named documents in a corpus memory, in one
// transaction: every existing chunk `<docId>#<n>` of each document goes, then the new chunks
// are written.
func (s *Store) PutDocuments(ctx context.Context, tenant, memoryID string, docIDs []string, chunks []core.Entry) error {
	err := s.tx(ctx, func(t pgx.Tx) error {
		b := &pgx.Batch{}
		for _, id := range docIDs {
			b.Queue(`DELETE FROM entries WHERE tenant = $1 AND memory_id = $2 AND namespace = $3
				AND kind = 'doc' AND starts_with(id, $4)`, tenant, memoryID, corpusNamespace, id+"#")
		}
		now := time.Now().UTC()
		for _, e := range chunks {
			e.Namespace = corpusNamespace
			e = stamp(e, now)
			b.Queue(`INSERT INTO entries (`+entryInsertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
				$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`, entryArgs(e)...)
		}
		return t.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return translate(err, "put documents", "", "")
	}
	return nil
}
