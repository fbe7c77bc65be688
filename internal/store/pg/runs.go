package pg

// Run recordings in Postgres.
//
// Postgres is the source of truth. Table runs holds each run's tail state (next_index = the
// stream's length, dropped = evicted events = first retained index, truncated_events, the
// start and end facts), table run_events one row per RETAINED event with its stream index,
// its payload and meta as the JSON text recorded (bytea: key order is part of a payload's
// identity, so jsonb would break the repeat rule), and its slot flag. Every acknowledged batch
// is committed before AppendEvents returns, so a 2xx survives a crash of the server process.
//
// An append is ONE transaction:
//
//  1. SELECT the run row FOR UPDATE. This serialises appends to one run across every process
//     sharing the database: the lock holder is the only writer of the run's tail.
//  2. Get the live core.EventTail: from the process-local cache when the cached entry reflects
//     exactly the row (same created_at and next_index), else rebuilt with
//     core.RestoreEventTail from the retained rows. A cache that another process made stale is
//     detected by next_index and rebuilt, so two processes always agree. The entry is TAKEN
//     OUT of the cache while in use and put back only after a successful commit; on any error
//     (including a serialisation retry) it is dropped, so a tail holding uncommitted pushes is
//     never seen by anyone.
//  3. Push the batch (core.ApplyAppend), insert the new events that are still retained
//     (COPY), delete the rows the tail evicted (idx < the new dropped) and update the run row.
//  4. Commit, then return the tail to the cache.
//
// The cache is bounded (maxCachedTails runs, least recently used out first; idle entries are
// evicted after tailIdle), so memory stays bounded however many runs are open; an evicted
// tail costs one rebuild on the run's next append, nothing else. Reads (recording, event
// pages, the SSE follower's polls) never use the cache: they read the committed rows in one
// REPEATABLE READ snapshot, so a read through any process sees the same tail.
//
// Retention: Sweep deletes runs finished before its policy's AuditBefore, with their events.
//
// Identity: a repeat is decided on the payload as sent. When the recorded payload is not all of
// it (vectors summarised, or truncated to its first 64 KiB) the row's identity column holds
// the digest of the payload as sent (runs.ValueDigest), which a rebuilt tail compares too.

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
)

const (
	// maxCachedTails bounds the live tails one process keeps.
	maxCachedTails = 256
	// tailIdle evicts a cached tail that saw no append for this long.
	tailIdle = 5 * time.Minute
)

// runState is the Store's process-local run state: the tail cache. Its zero value is ready
// to use.
type runState struct {
	mu    sync.Mutex
	lru   *list.List // of *tailEntry, most recently used first
	byKey map[runKey]*list.Element
}

type runKey struct{ tenant, id string }

type tailEntry struct {
	key       runKey
	tail      *runs.EventTail
	createdAt time.Time // the run's, so a re-created run never reuses an old tail
	next      int64     // the next_index the tail reflects
	used      time.Time
}

// takeTail removes and returns the cached tail for k when it reflects (createdAt, next).
func (rs *runState) takeTail(k runKey, createdAt time.Time, next int64) *runs.EventTail {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	el, ok := rs.byKey[k]
	if !ok {
		return nil
	}
	rs.lru.Remove(el)
	delete(rs.byKey, k)
	e := el.Value.(*tailEntry)
	if e.next != next || !e.createdAt.Equal(createdAt) {
		return nil
	}
	return e.tail
}

// putTail caches t as reflecting (createdAt, next), evicting idle and least recently used
// entries beyond the bound.
func (rs *runState) putTail(k runKey, t *runs.EventTail, createdAt time.Time, next int64) {
	now := time.Now()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.lru == nil {
		rs.lru, rs.byKey = list.New(), map[runKey]*list.Element{}
	}
	if el, ok := rs.byKey[k]; ok {
		rs.lru.Remove(el)
	}
	rs.byKey[k] = rs.lru.PushFront(&tailEntry{key: k, tail: t, createdAt: createdAt, next: next, used: now})
	for rs.lru.Len() > 0 {
		back := rs.lru.Back()
		e := back.Value.(*tailEntry)
		if rs.lru.Len() <= maxCachedTails && now.Sub(e.used) < tailIdle {
			break
		}
		rs.lru.Remove(back)
		delete(rs.byKey, e.key)
	}
}

func (rs *runState) dropTail(k runKey) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if el, ok := rs.byKey[k]; ok {
		rs.lru.Remove(el)
		delete(rs.byKey, k)
	}
}

// CachedTails reports how many live tails this process holds (tests, metrics).
func (s *Store) CachedTails() int {
	s.runs.mu.Lock()
	defer s.runs.mu.Unlock()
	if s.runs.lru == nil {
		return 0
	}
	return s.runs.lru.Len()
}

const runColumns = `tenant, id, namespace, conversation_id, principal, turn, max_events,
	record_embeddings, finished, complete, started_at, last_wall_at, finished_at, next_index,
	dropped, truncated_events, created_at, last_received_at`

func scanRun(row pgx.Row) (runs.Run, error) {
	var (
		r                        runs.Run
		conv, principal          *string
		turn                     *int
		started, lastWall, finAt *time.Time
		lastReceived             *time.Time
	)
	err := row.Scan(&r.Tenant, &r.ID, &r.Namespace, &conv, &principal, &turn, &r.MaxEvents,
		&r.RecordEmbeddings, &r.Finished, &r.Complete, &started, &lastWall, &finAt, &r.NextIndex,
		&r.Dropped, &r.TruncatedEvents, &r.CreatedAt, &lastReceived)
	if err != nil {
		return runs.Run{}, err
	}
	r.ConversationID, r.Principal, r.Turn = deref(conv), deref(principal), deref(turn)
	r.StartedAt, r.LastWallClock, r.FinishedAt = utcOpt(started), utcOpt(lastWall), utcOpt(finAt)
	r.LastReceivedAt = utcOpt(lastReceived)
	r.CreatedAt = r.CreatedAt.UTC()
	return r, nil
}

// digestBytes maps an event's identity digest to its column (NULL: none); digestOf reads it
// back (a value of another length, which the store never writes, reads as none).
func digestBytes(d *runs.Digest) []byte {
	if d == nil {
		return nil
	}
	return d[:]
}

func digestOf(b []byte) *runs.Digest {
	if len(b) != len(runs.Digest{}) {
		return nil
	}
	d := runs.Digest(b)
	return &d
}

func utcOpt(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func translateRun(err error, op, id string) error {
	var ce *core.ConflictError
	var le *core.LimitError
	if errors.As(err, &ce) || errors.As(err, &le) || errors.Is(err, core.ErrKeyReused) {
		return err
	}
	return translate(err, op, "run", id)
}

// CreateRun stores a new open run. With admit, the tenant's open runs are counted under a
// per-tenant advisory lock, so concurrent opens (from any process) see each other.
func (s *Store) CreateRun(ctx context.Context, r runs.Run, admit func(open int) error, once *core.Once) error {
	err := s.inOnce(ctx, r.Tenant, once, func(tx pgx.Tx) error {
		if admit != nil {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('footprint.runs/' || $1, 0))`, r.Tenant); err != nil {
				return err
			}
			var open int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant = $1 AND NOT finished`, r.Tenant).Scan(&open); err != nil {
				return err
			}
			if err := admit(open); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO runs (tenant, id, namespace, conversation_id, principal, turn,
			max_events, record_embeddings, started_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
			r.Tenant, r.ID, r.Namespace, nullString(r.ConversationID), nullString(r.Principal), nullInt(r.Turn),
			r.MaxEvents, r.RecordEmbeddings, nullTime(r.StartedAt), r.CreatedAt)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return runs.ErrRunExists
		}
		return nil
	})
	return translateRun(err, "create run", r.ID)
}

// GetRun returns the run's state.
func (s *Store) GetRun(ctx context.Context, tenant, id string) (runs.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = $1 AND id = $2`, tenant, id))
	if err != nil {
		return runs.Run{}, translateRun(err, "get run", id)
	}
	return r, nil
}

// ListRuns lists runs newest first, keyset-paged on (created_at, id).
func (s *Store) ListRuns(ctx context.Context, q runs.RunQuery) ([]runs.Run, error) {
	if q.Limit <= 0 {
		return []runs.Run{}, nil
	}
	sql := `SELECT ` + runColumns + ` FROM runs WHERE tenant = $1`
	args := []any{q.Tenant}
	switch {
	case q.Namespace != "":
		args = append(args, q.Namespace)
		sql += fmt.Sprintf(` AND namespace = $%d`, len(args))
		if q.Turn > 0 { // runs_turn_idx
			args = append(args, q.Turn)
			sql += fmt.Sprintf(` AND turn = $%d`, len(args))
		}
	case q.Principal != "":
		args = append(args, q.Principal)
		sql += fmt.Sprintf(` AND principal = $%d`, len(args))
	}
	if !q.AfterCreated.IsZero() {
		args = append(args, q.AfterCreated, q.AfterID)
		sql += fmt.Sprintf(` AND (created_at, id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, q.Limit)
	sql += fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err, "list runs", "", "")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.Run, error) { return scanRun(row) })
	if err != nil {
		return nil, translate(err, "list runs", "", "")
	}
	return out, nil
}

// AppendEvents appends a batch in one transaction (see the package comment of this file).
func (s *Store) AppendEvents(ctx context.Context, tenant, id string, prepare func(runs.Run) ([]runs.RunEvent, error)) (runs.Run, error) {
	key := runKey{tenant, id}
	var out runs.Run
	var tail *runs.EventTail
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tail = nil
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		batch, err := prepare(r)
		if err != nil {
			return err
		}
		t := s.runs.takeTail(key, r.CreatedAt, r.NextIndex)
		if t == nil {
			if t, err = s.restoreTail(ctx, tx, r); err != nil {
				return err
			}
		}
		tail = t // from here on, t holds pushes that are not committed yet
		before := r.Dropped
		pushed := runs.ApplyAppend(&r, t, batch)
		var rows [][]any
		for _, e := range pushed {
			if e.Index < r.Dropped {
				continue // evicted within its own batch
			}
			var ob *int64
			var sha *string
			if e.Truncated != nil {
				ob, sha = &e.Truncated.OriginalBytes, &e.Truncated.SHA256
			}
			var meta []byte
			if len(e.Meta) > 0 {
				meta = e.Meta
			}
			rows = append(rows, []any{tenant, id, e.Index, e.Type, []byte(e.Payload), meta, e.Slot, ob, sha,
				digestBytes(e.Identity), nullTime(e.ReceivedAt())})
		}
		if r.Dropped > before {
			if _, err := tx.Exec(ctx, `DELETE FROM run_events WHERE tenant = $1 AND run_id = $2 AND idx < $3`,
				tenant, id, r.Dropped); err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"run_events"},
				[]string{"tenant", "run_id", "idx", "type", "payload", "meta", "slot", "original_bytes", "sha256", "identity", "received_at"},
				pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET next_index = $3, dropped = $4, truncated_events = $5,
			started_at = $6, last_wall_at = $7, last_received_at = $8 WHERE tenant = $1 AND id = $2`,
			tenant, id, r.NextIndex, r.Dropped, r.TruncatedEvents, nullTime(r.StartedAt), nullTime(r.LastWallClock),
			nullTime(r.LastReceivedAt)); err != nil {
			return err
		}
		out = r
		return nil
	})
	if err != nil {
		// Nothing was committed (or we cannot know): the tail taken out holds pushes the
		// database may not have, so it is not returned to the cache.
		return runs.Run{}, translateRun(err, "append events", id)
	}
	s.runs.putTail(key, tail, out.CreatedAt, out.NextIndex)
	return normaliseRun(out), nil
}

// normaliseRun gives a run's times the precision a read returns (microseconds, UTC).
func normaliseRun(r runs.Run) runs.Run {
	trunc := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return t.UTC().Truncate(time.Microsecond)
	}
	r.StartedAt, r.LastWallClock, r.FinishedAt, r.CreatedAt = trunc(r.StartedAt), trunc(r.LastWallClock), trunc(r.FinishedAt), trunc(r.CreatedAt)
	r.LastReceivedAt = trunc(r.LastReceivedAt)
	return r
}

// restoreTail rebuilds a run's tail from its retained rows.
func (s *Store) restoreTail(ctx context.Context, tx pgx.Tx, r runs.Run) (*runs.EventTail, error) {
	rows, err := tx.Query(ctx, `SELECT idx, type, payload, meta, slot, identity FROM run_events
		WHERE tenant = $1 AND run_id = $2 ORDER BY idx`, r.Tenant, r.ID)
	if err != nil {
		return nil, err
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.Event, error) {
		var e runs.Event
		var payload, meta, identity []byte
		if err := row.Scan(&e.Index, &e.Type, &payload, &meta, &e.Slot, &identity); err != nil {
			return e, err
		}
		e.Payload = payload
		e.Identity = digestOf(identity)
		if len(meta) > 0 {
			e.Meta = meta
		}
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	t, err := runs.RestoreEventTail(float64(r.MaxEvents), events, r.Dropped)
	if err != nil {
		return nil, fmt.Errorf("restore tail of run %q: %w", r.ID, err)
	}
	return t, nil
}

// UpdateRun locks the run, lets change decide, and stores its finish when it changed one.
func (s *Store) UpdateRun(ctx context.Context, tenant, id string, change func(*runs.Run) (bool, error)) (runs.Run, error) {
	var out runs.Run
	var domain error // change's error, returned as it is
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		changed, err := change(&r)
		if err != nil {
			domain = err
			return err
		}
		if changed {
			if _, err := tx.Exec(ctx, `UPDATE runs SET finished = $3, complete = $4, finished_at = $5
				WHERE tenant = $1 AND id = $2`, tenant, id, r.Finished, r.Complete, nullTime(r.FinishedAt)); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	if domain != nil && errors.Is(err, domain) {
		return runs.Run{}, domain
	}
	if err != nil {
		return runs.Run{}, translateRun(err, "update run", id)
	}
	if out.Finished {
		s.runs.dropTail(runKey{tenant, id}) // a finished run takes no more appends
	}
	return normaliseRun(out), nil
}

// RunEvents reads the run and its retained events with idx > after in one snapshot.
func (s *Store) RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (runs.Run, []runs.RunEvent, error) {
	var (
		r   runs.Run
		out []runs.RunEvent
	)
	read := func() (err error) {
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if r, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant = $1 AND id = $2`, tenant, id)); err != nil {
			return err
		}
		lim := any(nil)
		if limit > 0 {
			lim = limit
		}
		rows, err := tx.Query(ctx, `SELECT idx, type, payload, meta, slot, original_bytes, sha256, identity, received_at FROM run_events
			WHERE tenant = $1 AND run_id = $2 AND idx > $3 ORDER BY idx LIMIT $4`, tenant, id, after, lim)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.RunEvent, error) {
			var e runs.RunEvent
			var payload, meta, identity []byte
			var ob *int64
			var sha *string
			var received *time.Time
			if err := row.Scan(&e.Index, &e.Type, &payload, &meta, &e.Slot, &ob, &sha, &identity, &received); err != nil {
				return e, err
			}
			e.Payload = payload
			e.Identity = digestOf(identity)
			if received != nil {
				e.Received = received.UnixMilli()
			}
			if len(meta) > 0 {
				e.Meta = meta
			}
			if ob != nil {
				e.Truncated = &runs.EventTruncation{OriginalBytes: *ob, SHA256: deref(sha)}
			}
			return e, nil
		})
		return err
	}
	if err := read(); err != nil {
		return runs.Run{}, nil, translateRun(err, "read run events", id)
	}
	if out == nil {
		out = []runs.RunEvent{}
	}
	return r, out, nil
}

// DeleteFinishedRuns deletes runs finished before cutoff, with their events, in batches.
func (s *Store) DeleteFinishedRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.tx(ctx, func(tx pgx.Tx) error {
			// By primary key, as Sweep's batches (sweep.go says why).
			rows, err := tx.Query(ctx, `DELETE FROM runs WHERE (tenant, id) IN (
				SELECT tenant, id FROM runs WHERE finished AND finished_at < $1 LIMIT $2) RETURNING tenant, id`, cutoff, 500)
			if err != nil {
				return err
			}
			keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runKey, error) {
				var k runKey
				return k, row.Scan(&k.tenant, &k.id)
			})
			if err != nil {
				return err
			}
			n = int64(len(keys))
			for _, k := range keys {
				if _, err := tx.Exec(ctx, `DELETE FROM run_events WHERE tenant = $1 AND run_id = $2`, k.tenant, k.id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, translate(err, "delete finished runs", "", "")
		}
		total += n
		if n < 500 {
			return total, nil
		}
	}
}
