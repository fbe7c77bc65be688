package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
)

var _ explain.Store = (*Store)(nil)

// linkTurnSQL adds run ids ($4) and recall ids ($5) to a turn's links (set union, by
// footprint_union of migration 00019: Citus refuses a subquery in DO UPDATE SET).
const linkTurnSQL = `INSERT INTO turn_links (tenant, namespace, turn, run_ids, recall_ids, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (tenant, namespace, turn) DO UPDATE SET
		run_ids = footprint_union(turn_links.run_ids, EXCLUDED.run_ids),
		recall_ids = footprint_union(turn_links.recall_ids, EXCLUDED.recall_ids),
		updated_at = EXCLUDED.updated_at`

// LinkTurn adds a run and recall receipts to a turn's links (set union).
func (s *Store) LinkTurn(ctx context.Context, tenant, namespace string, turn int, runID string, recallIDs []string, now time.Time) error {
	runs := []string{}
	if runID != "" {
		runs = append(runs, runID)
	}
	if recallIDs == nil {
		recallIDs = []string{}
	}
	_, err := s.pool.Exec(ctx, linkTurnSQL, tenant, namespace, turn, runs, recallIDs, now)
	return translate(err, "link turn", "", "")
}

// TurnLinks returns a turn's explicit links.
func (s *Store) TurnLinks(ctx context.Context, tenant, namespace string, turn int) ([]string, []string, error) {
	var runs, recalls []string
	err := s.pool.QueryRow(ctx, `SELECT run_ids, recall_ids FROM turn_links WHERE tenant = $1 AND namespace = $2 AND turn = $3`,
		tenant, namespace, turn).Scan(&runs, &recalls)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, translate(err, "turn links", "", "")
	}
	return runs, recalls, nil
}

// RecallsFor returns the receipts made for a turn of the namespace, or named by id.
func (s *Store) RecallsFor(ctx context.Context, tenant, namespace string, turn int, ids []string) ([]recall.RecallResult, error) {
	if ids == nil {
		ids = []string{}
	}
	rows, err := s.pool.Query(ctx, `SELECT body FROM recalls
		WHERE tenant = $1 AND namespace = $2 AND (turn = $3 OR id = ANY($4))
		ORDER BY created_at, id`, tenant, namespace, turn, ids)
	if err != nil {
		return nil, translate(err, "recalls for turn", "", "")
	}
	defer rows.Close()
	var out []recall.RecallResult
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, translate(err, "recalls for turn", "", "")
		}
		var r recall.RecallResult
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("decode stored recall: %w", err)
		}
		out = append(out, r)
	}
	return out, translate(rows.Err(), "recalls for turn", "", "")
}

// TurnEntries returns a turn's live snapshots and messages in every memory.
func (s *Store) TurnEntries(ctx context.Context, tenant, namespace, conversation string, turn int, now time.Time) ([]core.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+entrySelectColumns(false)+` FROM entries
		WHERE tenant = $1 AND namespace = $2 AND turn = $3 AND kind IN ('snap', 'msg')
			AND (expires_at IS NULL OR expires_at > $4)
			AND ($5 = '' OR source_conversation = $5)
		ORDER BY memory_id, kind DESC, idx`, tenant, namespace, turn, now, conversation)
	if err != nil {
		return nil, translate(err, "turn entries", "", "")
	}
	defer rows.Close()
	var out []core.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, translate(err, "turn entries", "", "")
		}
		out = append(out, e)
	}
	return out, translate(rows.Err(), "turn entries", "", "")
}

// LookupEntry resolves an entry as it is now: live, expired (still stored), forgotten (its
// namespace was forgotten) or missing.
func (s *Store) LookupEntry(ctx context.Context, tenant, namespace, memoryID, id string, now time.Time) (explain.EntryLookup, error) {
	e, err := scanEntry(s.pool.QueryRow(ctx, `SELECT `+entrySelectColumns(false)+` FROM entries
		WHERE tenant = $1 AND memory_id = $2 AND namespace = $3 AND id = $4`, tenant, memoryID, namespace, id))
	switch {
	case err == nil:
		return explain.EntryLookup{Entry: e, Found: true, Expired: !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(now)}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return explain.EntryLookup{}, translate(err, "lookup entry", "", "")
	}
	var forgotten bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM forgotten_namespaces WHERE tenant = $1 AND namespace = $2)`,
		tenant, namespace).Scan(&forgotten); err != nil {
		return explain.EntryLookup{}, translate(err, "lookup entry", "", "")
	}
	return explain.EntryLookup{Forgotten: forgotten}, nil
}

// SaveAblation records a rerun of a turn.
func (s *Store) SaveAblation(ctx context.Context, tenant, namespace string, turn int, a explain.Ablation, once *core.Once) error {
	excluded := a.Excluded
	if excluded == nil {
		excluded = []string{}
	}
	err := s.inOnce(ctx, tenant, once, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO ablations (tenant, id, namespace, turn, excluded, answer, flipped, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, tenant, a.ID, namespace, turn, excluded, a.Answer, a.Flipped, a.CreatedAt)
		return err
	})
	if errors.Is(err, core.ErrKeyReused) {
		return err
	}
	return translate(err, "save ablation", "", "")
}

// Ablations lists a turn's recorded reruns, oldest first.
func (s *Store) Ablations(ctx context.Context, tenant, namespace string, turn int) ([]explain.Ablation, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, excluded, answer, flipped, created_at FROM ablations
		WHERE tenant = $1 AND namespace = $2 AND turn = $3 ORDER BY created_at, id`, tenant, namespace, turn)
	if err != nil {
		return nil, translate(err, "ablations", "", "")
	}
	defer rows.Close()
	var out []explain.Ablation
	for rows.Next() {
		var a explain.Ablation
		if err := rows.Scan(&a.ID, &a.Excluded, &a.Answer, &a.Flipped, &a.CreatedAt); err != nil {
			return nil, translate(err, "ablations", "", "")
		}
		a.CreatedAt = a.CreatedAt.UTC()
		out = append(out, a)
	}
	return out, translate(rows.Err(), "ablations", "", "")
}
