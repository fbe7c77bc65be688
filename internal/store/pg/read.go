package pg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
)

// The read side for frontends: conversations, turns, receipts by conversation, where an entry
// was used. None of it writes, and it adds little to the write paths: every query is served by
// the indexes the writes already keep, and by two of migration 00015, recalls_namespace_idx
// (one entry per receipt) and runs_turn_idx (one per run opened for a turn). Turn writes keep
// no index for this. Checked with EXPLAIN ANALYZE on 315k entries (2,000 conversations and one
// of 5,000 turns): a page of 50 conversations is 51 index probes plus one range scan of their
// entries (which it counts); a page of 50 turns 0.7 ms, wherever in the conversation it starts.

var (
	_ turns.ReadStore     = (*Store)(nil)
	_ recall.ReceiptStore = (*Store)(nil)
	_ explain.UsageStore  = (*Store)(nil)
)

// conversationsSQL lists the distinct namespaces of a tenant in (lo, hi), in byte order, at
// most $4 of them, with a loose index scan: each step of the recursion is one probe of
// entries_newest_idx (tenant, namespace, ...) for the next namespace above the last, so a page
// costs $4 probes however many entries each conversation holds. conversationsOfMemorySQL does
// the same through the primary key (tenant, memory_id, namespace, id), for one memory.
const conversationsSQL = `WITH RECURSIVE ns(namespace) AS (
		(SELECT e.namespace FROM entries e
			WHERE e.tenant = $1 AND e.namespace > $2 AND e.namespace < $3
			ORDER BY e.namespace LIMIT 1)
		UNION ALL
		SELECT (SELECT e.namespace FROM entries e
			WHERE e.tenant = $1 AND e.namespace > ns.namespace AND e.namespace < $3
			ORDER BY e.namespace LIMIT 1)
		FROM ns WHERE ns.namespace IS NOT NULL)
	SELECT namespace FROM ns WHERE namespace IS NOT NULL LIMIT $4`

const conversationsOfMemorySQL = `WITH RECURSIVE ns(namespace) AS (
		(SELECT e.namespace FROM entries e
			WHERE e.tenant = $1 AND e.memory_id = $5 AND e.namespace > $2 AND e.namespace < $3
			ORDER BY e.namespace LIMIT 1)
		UNION ALL
		SELECT (SELECT e.namespace FROM entries e
			WHERE e.tenant = $1 AND e.memory_id = $5 AND e.namespace > ns.namespace AND e.namespace < $3
			ORDER BY e.namespace LIMIT 1)
		FROM ns WHERE ns.namespace IS NOT NULL)
	SELECT namespace FROM ns WHERE namespace IS NOT NULL LIMIT $4`

// conversationCountsSQL counts the live entries of each memory in the namespaces of a page:
// an index range scan of entries_newest_idx per namespace. It reads every entry of those
// conversations (their expiry is in the row): a page costs what its conversations hold.
const conversationCountsSQL = `SELECT namespace, memory_id, count(*), coalesce(max(turn), 0), min(created_at), max(updated_at)
	FROM entries
	WHERE tenant = $1 AND namespace = ANY($2) AND (expires_at IS NULL OR expires_at > $3)
	GROUP BY namespace, memory_id
	ORDER BY namespace, memory_id`

// ListConversations examines the tenant's namespaces under q.Prefix after q.After.
func (s *Store) ListConversations(ctx context.Context, q turns.ConversationQuery) ([]turns.ConversationRecord, string, error) {
	if q.Limit <= 0 || q.Prefix == "" || !strings.HasSuffix(q.Prefix, "/") {
		return nil, "", nil
	}
	lo := max(q.After, q.Prefix)
	hi := q.Prefix[:len(q.Prefix)-1] + "0" // '0' follows '/': every namespace under the prefix sorts below
	sql, args := conversationsSQL, []any{q.Tenant, lo, hi, q.Limit + 1}
	if q.MemoryID != "" {
		sql, args = conversationsOfMemorySQL, append(args, q.MemoryID)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", translate(err, "list conversations", "", "")
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, "", translate(err, "list conversations", "", "")
	}
	next := ""
	if len(names) > q.Limit {
		names = names[:q.Limit]
		next = names[len(names)-1]
	}
	if len(names) == 0 {
		return []turns.ConversationRecord{}, "", nil
	}
	byNS := map[string]*turns.ConversationRecord{}
	out := make([]turns.ConversationRecord, len(names))
	for i, ns := range names {
		out[i] = turns.ConversationRecord{Namespace: ns, Memories: []turns.MemoryCount{}}
		byNS[ns] = &out[i]
	}
	rows, err = s.pool.Query(ctx, conversationCountsSQL, q.Tenant, names, q.Now)
	if err != nil {
		return nil, "", translate(err, "list conversations", "", "")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			ns, memoryID     string
			n                int64
			lastTurn         int
			created, updated time.Time
		)
		if err := rows.Scan(&ns, &memoryID, &n, &lastTurn, &created, &updated); err != nil {
			return nil, "", translate(err, "list conversations", "", "")
		}
		r := byNS[ns]
		r.Memories = append(r.Memories, turns.MemoryCount{MemoryID: memoryID, Entries: n})
		r.LastTurn = max(r.LastTurn, lastTurn)
		if created = created.UTC(); r.CreatedAt.IsZero() || created.Before(r.CreatedAt) {
			r.CreatedAt = created
		}
		if updated = updated.UTC(); updated.After(r.UpdatedAt) {
			r.UpdatedAt = updated
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", translate(err, "list conversations", "", "")
	}
	return out, next, nil
}

// entryGroupsSQL is a loose index scan for the (memory_id, kind) pairs a namespace holds
// entries of (one probe of entries_newest_idx per pair): the groups within which that index
// orders entries by turn. Queries below read each group by index, so their cost follows the
// page, not the conversation's length.
const entryGroupsSQL = `WITH RECURSIVE g(gm, gk) AS (
		(SELECT e.memory_id, e.kind FROM entries e WHERE e.tenant = $1 AND e.namespace = $2
			ORDER BY e.memory_id, e.kind LIMIT 1)
		UNION ALL
		SELECT n.memory_id, n.kind FROM g CROSS JOIN LATERAL (
			SELECT e.memory_id, e.kind FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $2 AND (e.memory_id, e.kind) > (g.gm, g.gk)
			ORDER BY e.memory_id, e.kind LIMIT 1) n)`

// turnNumbersSQL is a page of a namespace's turn numbers below $3, newest first: the top $4
// distinct turns of each group of turn-carrying entries (an index scan of entries_newest_idx
// per group that stops after $4 turns), of the receipts recorded for a turn
// (recalls_turn_idx), of the turn links (their primary key), and of the runs opened for a turn
// (runs_turn_idx), merged.
const turnNumbersSQL = entryGroupsSQL + `,
	t(turn) AS (
		SELECT x.turn FROM g CROSS JOIN LATERAL (
			SELECT DISTINCT e.turn FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $2 AND e.memory_id = g.gm AND e.kind = g.gk
				AND e.turn < $3::bigint AND (e.expires_at IS NULL OR e.expires_at > $5)
			ORDER BY e.turn DESC NULLS LAST LIMIT $4) x
		WHERE g.gk IN ('msg', 'snap', 'beat')
		UNION
		(SELECT DISTINCT r.turn FROM recalls r
			WHERE r.tenant = $1 AND r.namespace = $2 AND r.turn IS NOT NULL AND r.turn < $3::bigint
			ORDER BY r.turn DESC LIMIT $4)
		UNION
		(SELECT l.turn FROM turn_links l
			WHERE l.tenant = $1 AND l.namespace = $2 AND l.turn < $3::bigint
			ORDER BY l.turn DESC LIMIT $4)
		UNION
		(SELECT DISTINCT u.turn FROM runs u
			WHERE u.tenant = $1 AND u.namespace = $2 AND u.turn IS NOT NULL AND u.turn < $3::bigint
			ORDER BY u.turn DESC LIMIT $4))
	SELECT turn FROM t ORDER BY turn DESC LIMIT $4`

// turnEntriesSQL reads the live entries of the turns $3 in every group: the turn-carrying ones
// by their turn (an index lookup per group and turn), and the facts those turns last wrote
// (each group of facts is read whole: a conversation holds one fact per key).
const turnEntriesSQL = entryGroupsSQL + `
	SELECT ` + entryColumnsNoEmbedding + ` FROM (
		SELECT x.* FROM g CROSS JOIN LATERAL (
			SELECT * FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $2 AND e.memory_id = g.gm AND e.kind = g.gk
				AND e.turn = ANY($3) AND (e.expires_at IS NULL OR e.expires_at > $4)) x
		WHERE g.gk IN ('msg', 'snap', 'beat')
		UNION ALL
		SELECT x.* FROM g CROSS JOIN LATERAL (
			SELECT * FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $2 AND e.memory_id = g.gm AND e.kind = 'fact'
				AND e.source_turn = ANY($3) AND (e.expires_at IS NULL OR e.expires_at > $4)) x
		WHERE g.gk = 'fact') rows
	ORDER BY memory_id, kind, idx, id`

// ListTurns returns the records of q.Turns, or of up to q.Limit turns below q.Before.
func (s *Store) ListTurns(ctx context.Context, q turns.TurnQuery) ([]turns.TurnRecord, error) {
	numbers := slices.Clone(q.Turns)
	slices.SortFunc(numbers, func(a, b int) int { return b - a })
	numbers = slices.Compact(numbers)
	if q.Turns == nil {
		if q.Limit <= 0 {
			return []turns.TurnRecord{}, nil
		}
		before := int64(q.Before)
		if before <= 0 {
			before = 1 << 31 // above every turn
		}
		rows, err := s.pool.Query(ctx, turnNumbersSQL, q.Tenant, q.Namespace, before, q.Limit, q.Now)
		if err != nil {
			return nil, translate(err, "list turns", "", "")
		}
		if numbers, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return nil, translate(err, "list turns", "", "")
		}
	}
	out := make([]turns.TurnRecord, len(numbers))
	at := map[int]*turns.TurnRecord{}
	for i, n := range numbers {
		out[i] = turns.TurnRecord{Turn: n}
		at[n] = &out[i]
	}
	if len(numbers) == 0 {
		return out, nil
	}
	// Each statement reads its rows into the turns as the batch's Close receives them.
	b := &pgx.Batch{}
	b.Queue(turnEntriesSQL, q.Tenant, q.Namespace, numbers, q.Now).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			e, err := scanEntry(rows)
			if err != nil {
				return err
			}
			turn := e.Turn
			if e.Kind == core.KindFact {
				turn = e.SourceTurn
			}
			if r := at[turn]; r != nil {
				r.Entries = append(r.Entries, e)
			}
		}
		return rows.Err()
	})
	var turn int
	var runIDs, recallIDs []string
	var id, runID string
	b.Queue(`SELECT turn, run_ids, recall_ids FROM turn_links WHERE tenant = $1 AND namespace = $2 AND turn = ANY($3)`,
		q.Tenant, q.Namespace, numbers).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&turn, &runIDs, &recallIDs}, func() error {
			if r := at[turn]; r != nil {
				r.LinkedRunIDs, r.LinkedRecallIDs = runIDs, recallIDs
			}
			runIDs, recallIDs = nil, nil // a fresh slice per row: the turn keeps it
			return nil
		})
		return err
	})
	b.Queue(`SELECT turn, id, coalesce(run_id, '') FROM recalls WHERE tenant = $1 AND namespace = $2 AND turn = ANY($3)
		ORDER BY created_at, id`, q.Tenant, q.Namespace, numbers).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&turn, &id, &runID}, func() error {
			if r := at[turn]; r != nil {
				r.RecallIDs = append(r.RecallIDs, id)
				if runID != "" && !slices.Contains(r.RecallRunIDs, runID) {
					r.RecallRunIDs = append(r.RecallRunIDs, runID)
				}
			}
			return nil
		})
		return err
	})
	b.Queue(`SELECT turn, id FROM runs WHERE tenant = $1 AND namespace = $2 AND turn = ANY($3)
		ORDER BY created_at, id`, q.Tenant, q.Namespace, numbers).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&turn, &id}, func() error {
			if r := at[turn]; r != nil {
				r.RunIDs = append(r.RunIDs, id)
			}
			return nil
		})
		return err
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, translate(err, "list turns", "", "")
	}
	return out, nil
}

// recallPage is the paging clause of the receipt queries: (created_at, id) below the position
// $after (when $paged), newest first, served by recalls_namespace_idx.
const recallPage = ` AND (NOT $3::boolean OR (created_at, id) < ($4::timestamptz, $5::text))
	ORDER BY created_at DESC, id DESC LIMIT $6`

// ListRecalls returns a page of a namespace's receipts, newest first. With q.Turn, the receipts
// recorded for the turn (recalls_turn_idx) or named in its links (the primary key, by id).
func (s *Store) ListRecalls(ctx context.Context, q recall.RecallQuery) ([]recall.RecallRecord, string, error) {
	var at time.Time
	var aid string
	if q.After != "" {
		var err error
		if at, aid, err = recall.ParseReceiptPosition(q.After); err != nil {
			return nil, "", err
		}
	}
	sql := `SELECT id, coalesce(turn, 0), coalesce(run_id, ''), created_at, query_hash, admitted FROM recalls
		WHERE tenant = $1 AND namespace = $2`
	args := []any{q.Tenant, q.Namespace, q.After != "", at, aid, q.Limit + 1}
	if q.Turn > 0 {
		sql += ` AND (turn = $7 OR id = ANY(coalesce((SELECT l.recall_ids FROM turn_links l
			WHERE l.tenant = $1 AND l.namespace = $2 AND l.turn = $7), '{}')))`
		args = append(args, q.Turn)
	}
	rows, err := s.pool.Query(ctx, sql+recallPage, args...)
	if err != nil {
		return nil, "", translate(err, "list recalls", "", "")
	}
	defer rows.Close()
	out := []recall.RecallRecord{}
	for rows.Next() {
		var r recall.RecallRecord
		if err := rows.Scan(&r.ID, &r.Turn, &r.RunID, &r.CreatedAt, &r.QueryHash, &r.Admitted); err != nil {
			return nil, "", translate(err, "list recalls", "", "")
		}
		r.CreatedAt = r.CreatedAt.UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", translate(err, "list recalls", "", "")
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	out = out[:q.Limit]
	last := out[len(out)-1]
	return out, recall.ReceiptPosition(last.CreatedAt, last.ID), nil
}

// RecallsAdmitting returns a page of a namespace's receipts that admitted injectionID: the
// conversation's receipts in recalls_namespace_idx order, each row's admitted array checked,
// and only the page's bodies read.
func (s *Store) RecallsAdmitting(ctx context.Context, tenant, namespace, injectionID, after string, limit int) ([]recall.RecallResult, string, error) {
	var at time.Time
	var aid string
	if after != "" {
		var err error
		if at, aid, err = recall.ParseReceiptPosition(after); err != nil {
			return nil, "", err
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id, created_at, body FROM recalls
		WHERE tenant = $1 AND namespace = $2 AND admitted @> ARRAY[$7::text]`+recallPage,
		tenant, namespace, after != "", at, aid, limit+1, injectionID)
	if err != nil {
		return nil, "", translate(err, "recalls admitting", "", "")
	}
	defer rows.Close()
	out := []recall.RecallResult{}
	var positions []string
	for rows.Next() {
		var id string
		var created time.Time
		var body []byte
		if err := rows.Scan(&id, &created, &body); err != nil {
			return nil, "", translate(err, "recalls admitting", "", "")
		}
		positions = append(positions, recall.ReceiptPosition(created.UTC(), id))
		if len(out) == limit {
			continue // the one past the page: there is a next page
		}
		var r recall.RecallResult
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, "", fmt.Errorf("decode stored recall %q: %w", id, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", translate(err, "recalls admitting", "", "")
	}
	if len(positions) <= limit {
		return out, "", nil
	}
	return out, positions[limit-1], nil
}

// TurnsLinking returns the turns of the namespace posted with each of recallIDs: the
// namespace's turn links (a range of their primary key), each row's array checked.
func (s *Store) TurnsLinking(ctx context.Context, tenant, namespace string, recallIDs []string) (map[string][]int, error) {
	out := map[string][]int{}
	if len(recallIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT turn, recall_ids FROM turn_links
		WHERE tenant = $1 AND namespace = $2 AND recall_ids && $3::text[] ORDER BY turn`, tenant, namespace, recallIDs)
	if err != nil {
		return nil, translate(err, "turns linking", "", "")
	}
	defer rows.Close()
	for rows.Next() {
		var turn int
		var ids []string
		if err := rows.Scan(&turn, &ids); err != nil {
			return nil, translate(err, "turns linking", "", "")
		}
		for _, id := range ids {
			if slices.Contains(recallIDs, id) {
				out[id] = append(out[id], turn)
			}
		}
	}
	return out, translate(rows.Err(), "turns linking", "", "")
}

// Ablation returns one recorded rerun with its namespace and turn.
func (s *Store) Ablation(ctx context.Context, tenant, id string) (string, int, explain.Ablation, error) {
	var ns string
	var turn int
	var a explain.Ablation
	err := s.pool.QueryRow(ctx, `SELECT namespace, turn, id, excluded, answer, flipped, created_at FROM ablations
		WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&ns, &turn, &a.ID, &a.Excluded, &a.Answer, &a.Flipped, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, explain.Ablation{}, &core.NotFoundError{What: "ablation", ID: id}
	}
	if err != nil {
		return "", 0, explain.Ablation{}, translate(err, "ablation", "ablation", id)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return ns, turn, a, nil
}
