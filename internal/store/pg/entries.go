package pg

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

var _ turns.Store = (*Store)(nil)

// lockNamespaceSQL takes the transaction-scoped advisory lock of (tenant, namespace): the lock
// that serialises turn writes and forgets per namespace and nothing else. Its key is a 64-bit
// hash of both; a collision between two namespaces only makes them wait for each other. An
// advisory lock lives in shared memory: unlike a row lock (SELECT ... FOR UPDATE on a
// conversations row, as before) it writes no WAL and dirties no page, and needs no row to exist.
const lockNamespaceSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7317))`

// insertEntriesSQL writes n new entries (n rows of entryInsertColumns' 25 values, then the
// write's clock). An EXPIRED row of the same id is invisible and is replaced as if it did not
// exist (every column, version and counters included). A LIVE one is never overwritten: the
// conflict branch then calls footprint_entry_in_way (migration 00010), which raises the
// primary-key violation a plain INSERT would, naming the entry, and that aborts the whole
// transaction. The conflict arbiter is the primary key whatever the table's statistics, so no
// cached plan can make this a scan. One statement for all of a write's entries: Postgres
// prepares the executor and the table's CHECK constraints once per statement, which cost as
// much as a row's insert. Nothing is returned: every row stored is exactly the one sent
// (asStored), and returning them cost Postgres a jsonb rendering and the server a scan per row.
func insertEntriesSQL(n int) string {
	return cachedSQL(sqlKey{kind: "insert-entries", n: n}, func() string { return buildInsertEntriesSQL(n) })
}

func buildInsertEntriesSQL(n int) string {
	var sb strings.Builder
	sb.WriteString(`INSERT INTO entries (` + entryInsertColumns + `) VALUES `)
	const cols = entryInsertArity
	for r := range n {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "$%d", r*cols+c+1)
		}
		sb.WriteByte(')')
	}
	clock := fmt.Sprintf("$%d::timestamptz", n*cols+1)
	sb.WriteString(`
	ON CONFLICT (tenant, memory_id, namespace, id) DO UPDATE SET
		(kind, turn, idx, value, metadata, version, created_at, updated_at, last_accessed_at,
			access_count, expires_at, tier, source_turn, source_run_id, embedding,
			embedding_model, embedding_dims, source_conversation, superseded_value,
			superseded_conversation, superseded_turn, lex_terms, lex_freqs, lex_length)
		= (EXCLUDED.kind, EXCLUDED.turn, EXCLUDED.idx, EXCLUDED.value, EXCLUDED.metadata,
			EXCLUDED.version, EXCLUDED.created_at, EXCLUDED.updated_at,
			EXCLUDED.last_accessed_at, EXCLUDED.access_count, EXCLUDED.expires_at, EXCLUDED.tier,
			EXCLUDED.source_turn, EXCLUDED.source_run_id, EXCLUDED.embedding,
			EXCLUDED.embedding_model, EXCLUDED.embedding_dims, EXCLUDED.source_conversation,
			NULL, NULL, NULL, EXCLUDED.lex_terms, EXCLUDED.lex_freqs, EXCLUDED.lex_length),
		id = CASE WHEN (entries.expires_at IS NULL OR entries.expires_at > ` + clock + `)
			THEN footprint_entry_in_way(EXCLUDED.memory_id, EXCLUDED.id) ELSE EXCLUDED.id END`)
	return sb.String()
}

// maxInsertRows bounds the rows of one insertEntriesSQL statement (Postgres takes at most 65,535
// parameters); a write with more entries uses several.
const maxInsertRows = 256

// sqlKey names a statement text built for a shape: its kind, its count (rows, pairs) and the
// number of its first shape-dependent parameter.
type sqlKey struct {
	kind     string
	n, first int
}

// sqlTexts caches the texts cachedSQL builds: bounded, since every count is (maxInsertRows
// rows, maxSpeltPairs pairs).
var sqlTexts sync.Map // sqlKey → string

// cachedSQL returns the text for key, building it once.
func cachedSQL(key sqlKey, build func() string) string {
	if q, ok := sqlTexts.Load(key); ok {
		return q.(string)
	}
	q, _ := sqlTexts.LoadOrStore(key, build())
	return q.(string)
}

// maxLiveTurn is the query of the highest live stored turn of namespace among memoryIDs and
// kinds at now (0 when none), with its arguments. One probe of entries_newest_idx per (memory,
// kind): each walks the index from the highest turn down and stops at the first live row, so
// expired rows are skipped without reading the rest, and the cost does not grow with the
// namespace's other entries (facts, beats, documents never match the kind prefix). The ORDER BY
// spells the index's own ordering, so no sort is needed.
//
// The probes are spelt out, one scalar subquery per pair, in a text per number of pairs. Over
// unnest'ed arrays instead, Postgres' generic plan assumes 10 elements per array and costs 25
// times the real plan, so every execution of the prepared statement was planned afresh: a
// tenth of Postgres' CPU in a turn write. Spelt out, the generic plan is the real one. Past
// maxSpeltPairs pairs (a tenant with many writing memories) the arrays come back, planned each
// time, so that no statement grows without bound.
func maxLiveTurn(tenant, namespace string, memoryIDs, kinds []string, now time.Time) (string, []any) {
	expr, args := turnProbes(memoryIDs, kinds, 4)
	return "SELECT " + expr, append([]any{tenant, namespace, now}, args...)
}

// assertHighest is the query that fails (division by zero, SQLSTATE 22012) unless maxLiveTurn's
// answer is highest: a turn write's prediction, checked under the lock.
func assertHighest(tenant, namespace string, memoryIDs, kinds []string, now time.Time, highest int) (string, []any) {
	expr, args := turnProbes(memoryIDs, kinds, 5)
	return "SELECT 1 / (CASE WHEN " + expr + " = $4::int THEN 1 ELSE 0 END)", append([]any{tenant, namespace, now, highest}, args...)
}

// maxSpeltPairs bounds the (memory, kind) pairs turnProbes spells out.
const maxSpeltPairs = 32

// turnProbes is maxLiveTurn's expression and its arguments, which are parameters from $first
// on; $1 is the tenant, $2 the namespace, $3 the clock.
func turnProbes(memoryIDs, kinds []string, first int) (string, []any) {
	pairs := len(memoryIDs) * len(kinds)
	if pairs > maxSpeltPairs {
		return fmt.Sprintf(`(SELECT coalesce(max(t.turn), 0)
			FROM unnest($%d::text[]) AS m(id)
			CROSS JOIN unnest($%d::text[]) AS k(kind)
			CROSS JOIN LATERAL (
				SELECT e.turn FROM entries e
				WHERE e.tenant = $1 AND e.namespace = $2 AND e.memory_id = m.id AND e.kind = k.kind
					AND e.turn IS NOT NULL AND (e.expires_at IS NULL OR e.expires_at > $3::timestamptz)
				ORDER BY e.turn DESC NULLS LAST, e.idx DESC NULLS LAST
				LIMIT 1
			) t)`, first, first+1), []any{memoryIDs, kinds}
	}
	args := make([]any, 0, 2*pairs)
	for _, m := range memoryIDs {
		for _, k := range kinds {
			args = append(args, m, k)
		}
	}
	expr := cachedSQL(sqlKey{kind: "turn-probes", n: pairs, first: first}, func() string {
		if pairs == 0 {
			// No memory or no kind: nothing to probe. The parameters are still referenced,
			// so that every shape takes the same leading arguments.
			return "(CASE WHEN $1::text IS NULL OR $2::text IS NULL OR $3::timestamptz IS NULL THEN 0 ELSE 0 END)"
		}
		var sb strings.Builder
		sb.WriteString("greatest(0")
		for i := range pairs {
			fmt.Fprintf(&sb, `, (SELECT e.turn FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $2 AND e.memory_id = $%d AND e.kind = $%d
				AND e.turn IS NOT NULL AND (e.expires_at IS NULL OR e.expires_at > $3::timestamptz)
			ORDER BY e.turn DESC NULLS LAST, e.idx DESC NULLS LAST LIMIT 1)`, first+2*i, first+2*i+1)
		}
		sb.WriteString(")")
		return sb.String()
	})
	return expr, args
}

// withSharedTurns extends maxLiveTurn's query (sql, args) to count the conversation's turns kept
// in its principal's namespace: one probe per (memory, kind) of entries_principal_turns_idx
// (migration 00014), which walks the conversation's own rows there from the highest turn down.
func withSharedTurns(sql string, args []any, sh *turns.SharedScope, now time.Time) (string, []any) {
	first := len(args) + 1
	args = append(args, sh.Namespace, sh.Conversation, now)
	var sb strings.Builder
	sb.WriteString("SELECT greatest((" + strings.TrimPrefix(sql, "SELECT ") + ")")
	for _, m := range sh.MemoryIDs {
		for _, k := range sh.Kinds {
			args = append(args, m, string(k))
			fmt.Fprintf(&sb, `, (SELECT e.turn FROM entries e
			WHERE e.tenant = $1 AND e.namespace = $%d AND e.source_conversation = $%d
				AND e.memory_id = $%d AND e.kind = $%d AND e.turn IS NOT NULL
				AND (e.expires_at IS NULL OR e.expires_at > $%d::timestamptz)
			ORDER BY e.turn DESC NULLS LAST LIMIT 1)`, first, first+1, len(args)-1, len(args), first+2)
		}
	}
	sb.WriteString(")")
	return sb.String(), args
}

// upsertEntrySQL writes one entry ($1..$25, entryInsertColumns order; $26 the write's clock,
// $27 whether the entry is upserted, i.e. is a fact). A fact replaces a live row of its id,
// keeping created_at, access_count and last_accessed_at, bumping version and recording what it
// replaced (the superseded_* columns: the old value and where it came from). Any other kind
// never overwrites a live row: the WHERE refuses the update and no row is returned. An
// expired row (of any kind) is invisible and is replaced as if it did not exist.
const upsertEntrySQL = `INSERT INTO entries (` + entryInsertColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
		$19, $20, $21, $22, $23, $24, $25)
	ON CONFLICT (tenant, memory_id, namespace, id) DO UPDATE SET
		(kind, turn, idx, value, metadata, updated_at, expires_at, tier, source_turn,
			source_run_id, embedding, embedding_model, embedding_dims, source_conversation, lex_terms,
			lex_freqs, lex_length)
		= (EXCLUDED.kind, EXCLUDED.turn, EXCLUDED.idx, EXCLUDED.value, EXCLUDED.metadata,
			EXCLUDED.updated_at, EXCLUDED.expires_at, EXCLUDED.tier, EXCLUDED.source_turn,
			EXCLUDED.source_run_id, EXCLUDED.embedding, EXCLUDED.embedding_model,
			EXCLUDED.embedding_dims, EXCLUDED.source_conversation, EXCLUDED.lex_terms,
			EXCLUDED.lex_freqs, EXCLUDED.lex_length),
		superseded_value = CASE WHEN ` + liveOld + ` THEN entries.value END,
		superseded_conversation = CASE WHEN ` + liveOld + ` THEN entries.source_conversation END,
		superseded_turn = CASE WHEN ` + liveOld + ` THEN entries.source_turn END,
		version = CASE WHEN ` + liveOld + ` THEN entries.version + 1 ELSE EXCLUDED.version END,
		created_at = CASE WHEN ` + liveOld + ` THEN entries.created_at ELSE EXCLUDED.created_at END,
		access_count = CASE WHEN ` + liveOld + ` THEN entries.access_count ELSE EXCLUDED.access_count END,
		last_accessed_at = CASE WHEN ` + liveOld + ` THEN entries.last_accessed_at ELSE EXCLUDED.last_accessed_at END
	WHERE $27::boolean OR NOT ` + liveOld + `
	RETURNING ` + entryColumnsNoEmbedding

// liveOld is "the conflicting stored row is live" at the write's clock ($26); insertEntriesSQL
// spells the same test with its own clock parameter.
const liveOld = `(entries.expires_at IS NULL OR entries.expires_at > $26::timestamptz)`

// WriteTurn resolves the turn and writes w.Build(turn)'s entries in one transaction:
//
//  1. take the namespace's advisory lock (lockNamespaceSQL), so concurrent turn writes to one
//     namespace queue here (and writes to other namespaces never wait);
//  2. read the highest live stored turn of w.Scope (maxLiveTurn) and the stored fingerprints
//     in a fresh READ COMMITTED snapshot, which therefore includes every turn committed by
//     whoever held the lock before;
//  3. hand them to w.Decide (the domain's turn rule) and write what it decided.
//
// Without an idempotency key that is usually ONE round trip: when this process knows the
// namespace's highest turn (turnPredictor), BEGIN, the lock, a check that the stored highest
// turn is still that one, the writes and COMMIT go in one pipelined batch; otherwise, or when
// the check fails, two: BEGIN, the lock and the reads; then the writes and COMMIT. If any
// statement fails, Postgres skips the rest of the batch, COMMIT included, and the transaction
// is rolled back. Predicted writes may share their transaction with writes to the same
// namespace (turngroup.go) and to others (turncommit.go); each outcome is the one the write
// would have had alone.
//
// New rows get version 1, and zero timestamps are set to w.Now. Facts upsert by id; any
// other entry that would overwrite a live row fails the whole write with a
// *turns.EntryInTheWay. w.Decide's error is returned unchanged, with nothing written.
func (s *Store) WriteTurn(ctx context.Context, w turns.TurnWrite) (turns.TurnOutcome, error) {
	kinds := make([]string, len(w.Scope.Kinds))
	for i, k := range w.Scope.Kinds {
		kinds[i] = string(k)
	}
	memoryIDs := w.Scope.MemoryIDs
	if memoryIDs == nil {
		memoryIDs = []string{}
	}
	if w.Idempotency != nil || w.PrincipalNamespace != "" || w.Scope.Shared != nil {
		// Claims, and writes of conversations whose turns a principal's namespace keeps too, go
		// alone and the long way: a shared transaction takes conversations' locks only, and a
		// prediction checks the conversation's namespace only.
		out, _, err := s.writeTurn(ctx, w, memoryIDs, kinds, nil)
		return out, err
	}
	return s.writeTurnQueued(ctx, w, memoryIDs, kinds)
}

// writeTurnAlone is one write in a transaction of its own, with this process's other writes to
// key held back: predicted when it can be and guess is set, the long way otherwise.
func (s *Store) writeTurnAlone(ctx context.Context, w turns.TurnWrite, key string, memoryIDs, kinds []string, guess bool) (turns.TurnOutcome, error) {
	if p := s.turns.predict(key, w); guess && p != nil {
		out, res, err := s.writeTurn(ctx, w, memoryIDs, kinds, p)
		if !errors.Is(err, errStalePrediction) {
			if err == nil {
				s.turns.hits.Add(1)
				s.turns.remember(key, w, res.highest, out.Entries, res.fps)
			}
			return out, err
		}
		s.turns.stale.Add(1)
	}
	out, res, err := s.writeTurn(ctx, w, memoryIDs, kinds, nil)
	if err == nil {
		s.turns.remember(key, w, res.highest, out.Entries, res.fps)
	}
	return out, err
}

// errStalePrediction: the namespace's stored highest turn is not the one predicted.
var errStalePrediction = errors.New("pg: predicted turn is stale")

// turnRead is what a turn write learnt of the namespace: its highest live turn before the
// write and the vector fingerprints stored there after it.
type turnRead struct {
	highest int
	fps     map[string]core.Fingerprint
}

// writeTurn is one write of WriteTurn: predicted (p set: one batch, errStalePrediction when the
// check fails) or read (two batches).
func (s *Store) writeTurn(ctx context.Context, w turns.TurnWrite, memoryIDs, kinds []string, p *prediction) (turns.TurnOutcome, turnRead, error) {
	fpIDs := w.FingerprintMemories
	if fpIDs == nil {
		fpIDs = []string{}
	}
	var (
		outcome  turns.TurnOutcome
		read     turnRead
		domain   error // an error of the caller's making, returned as-is
		conflict *turns.EntryInTheWay
		stale    bool
	)
	err := withRetry(ctx, func() error {
		outcome, read, domain, conflict, stale = turns.TurnOutcome{}, turnRead{}, nil, nil, false
		return s.pipelinedTx(ctx, func(c *pgx.Conn) error {
			begin := s.txBegin() // still to be sent, at the head of the next batch
			// The key is claimed before the namespace is locked, in every
			// transaction, so the two locks are always taken in one order.
			if w.Idempotency != nil {
				replay, err := claimKey(ctx, c, begin, w.Tenant, *w.Idempotency, w.Now)
				begin = nil
				if err != nil {
					if errors.Is(err, turns.ErrKeyReused) {
						domain = err
					}
					return err
				}
				if replay != nil {
					outcome.Replay = replay
					_, err := c.Exec(ctx, "COMMIT")
					return err
				}
			}
			b := &pgx.Batch{}
			if p != nil {
				read.highest, read.fps = p.highest, maps.Clone(p.fps)
				queuePredicted(b, w, memoryIDs, kinds, p.highest, begin)
			} else {
				highest, have, err := lockAndRead(ctx, c, w, memoryIDs, kinds, fpIDs, begin)
				if err != nil {
					return err
				}
				read.highest, read.fps = highest, have
			}
			d, err := w.Decide(turns.TurnFacts{Highest: read.highest, Fingerprints: maps.Clone(read.fps)})
			if err != nil && p != nil {
				// Refused on predicted facts, which only the stored ones can confirm: redo the
				// long way, which reads them (a forget elsewhere may have cleared a fingerprint).
				stale = true
				return errStalePrediction
			}
			if err != nil {
				domain = err
				return err
			}
			for _, f := range d.NewFingerprints {
				read.fps[f.MemoryID] = f
			}
			outcome.Turn = d.Turn
			entries, newFingerprints := d.Entries, d.NewFingerprints
			// One batch writes everything: the entries, the new fingerprints, the
			// links, and COMMIT unless the idempotency response is still to be stored.
			commit := w.Idempotency == nil || w.Respond == nil
			q := queueWrites(b, w, outcome.Turn, entries, newFingerprints)
			if commit {
				b.Queue("COMMIT")
			}
			br := c.SendBatch(ctx, b)
			if p != nil {
				if err := readPredicted(br, begin); err != nil {
					_ = br.Close()
					if isStale(err) {
						stale = true
						return errStalePrediction
					}
					return err
				}
			}
			stored, err := q.read(br)
			if cerr := br.Close(); err == nil {
				err = cerr // COMMIT's
			}
			if err != nil {
				errors.As(err, &conflict)
				return err
			}
			outcome.Entries = stored
			if commit {
				return nil
			}
			body, err := w.Respond(outcome.Turn, outcome.Entries)
			if err != nil {
				domain = err
				return err
			}
			b = &pgx.Batch{}
			b.Queue(`UPDATE idempotency_keys SET status = 201, response = $3 WHERE tenant = $1 AND key = $2`,
				w.Tenant, w.Idempotency.Key, body)
			b.Queue("COMMIT")
			return c.SendBatch(ctx, b).Close()
		})
	})
	switch {
	case stale && errors.Is(err, errStalePrediction):
		return turns.TurnOutcome{}, read, errStalePrediction
	case domain != nil && errors.Is(err, domain):
		return turns.TurnOutcome{}, read, domain
	case conflict != nil && errors.Is(err, conflict):
		return turns.TurnOutcome{}, read, conflict
	case err != nil:
		return turns.TurnOutcome{}, read, translate(err, "write turn", "", "")
	}
	return outcome, read, nil
}

// isStale reports assertHighest's failed check.
func isStale(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeDivisionByZero
}

// queuePredicted queues the head of a predicted write's batch: begin (BEGIN and what goes with
// it, Store.txBegin; none when the transaction is open already), the namespace lock, and the
// check that its highest live turn is still highest. readPredicted reads it back.
func queuePredicted(b *pgx.Batch, w turns.TurnWrite, memoryIDs, kinds []string, highest int, begin []string) {
	for _, stmt := range begin {
		b.Queue(stmt)
	}
	b.Queue(lockNamespaceSQL, w.Tenant, w.Namespace)
	sql, args := assertHighest(w.Tenant, w.Namespace, memoryIDs, kinds, w.Now, highest)
	b.Queue(sql, args...)
}

// readPredicted reads the head of a predicted write's batch: begin's statements, the lock and
// the check.
func readPredicted(br pgx.BatchResults, begin []string) error {
	for range len(begin) + 2 {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// queuedWrites is what queueWrites put on a batch, for reading the results back in order.
type queuedWrites struct {
	entries      []core.Entry // as written (stamped), in the caller's order
	statements   [][]int      // per statement, the indexes in entries of the rows it writes
	upserts      []bool       // per statement: a fact's upsert, which returns its row
	links        bool
	fingerprints int
}

// queueWrites queues a turn's writes on b: the entries (the new ones in as few INSERTs as
// possible, each fact in an upsert of its own), the turn's links and the new fingerprints.
func queueWrites(b *pgx.Batch, w turns.TurnWrite, turn int, entries []core.Entry, newFingerprints []core.Fingerprint) queuedWrites {
	q := queuedWrites{entries: make([]core.Entry, len(entries)), fingerprints: len(newFingerprints)}
	var fresh []int
	for i, e := range entries {
		q.entries[i] = stamp(e, w.Now)
		if e.Kind == core.KindFact {
			b.Queue(upsertEntrySQL, append(entryArgs(q.entries[i]), w.Now, true)...)
			q.statements, q.upserts = append(q.statements, []int{i}), append(q.upserts, true)
		} else {
			fresh = append(fresh, i)
		}
	}
	for chunk := range slices.Chunk(fresh, maxInsertRows) {
		args := make([]any, 0, len(chunk)*entryInsertArity+1)
		for _, i := range chunk {
			args = append(args, entryArgs(q.entries[i])...)
		}
		b.Queue(insertEntriesSQL(len(chunk)), append(args, w.Now)...)
		q.statements, q.upserts = append(q.statements, chunk), append(q.upserts, false)
	}
	if w.LinkRunID != "" || len(w.LinkRecallIDs) > 0 {
		runs, recalls := []string{}, w.LinkRecallIDs
		if w.LinkRunID != "" {
			runs = append(runs, w.LinkRunID)
		}
		if recalls == nil {
			recalls = []string{}
		}
		b.Queue(linkTurnSQL, w.Tenant, w.Namespace, turn, runs, recalls, w.Now)
		q.links = true
	}
	for _, f := range newFingerprints {
		ns := w.Namespace
		if f.Namespace != "" {
			ns = f.Namespace // a principal-scoped memory's
		}
		b.Queue(`INSERT INTO embedding_fingerprints (tenant, memory_id, namespace, model, dims, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, w.Tenant, f.MemoryID, ns, f.Model, f.Dims, w.Now)
	}
	return q
}

// read reads q's results from br, in queue order, and returns the stored entries, in the
// caller's order. A live entry in the way (the primary-key violation insertEntriesSQL raises)
// is returned as a *turns.EntryInTheWay. It does not close br.
func (q queuedWrites) read(br pgx.BatchResults) ([]core.Entry, error) {
	stored := make([]core.Entry, len(q.entries))
	for s, rows := range q.statements {
		var err error
		if q.upserts[s] {
			var got core.Entry
			if got, err = scanEntry(br.QueryRow()); err == nil {
				got.Embedding = q.entries[rows[0]].Embedding // as written; the row comes back without it
				stored[rows[0]] = got
			}
		} else {
			var tag pgconn.CommandTag
			if tag, err = br.Exec(); err == nil && tag.RowsAffected() != int64(len(rows)) {
				err = fmt.Errorf("pg: %d entries inserted, want %d", tag.RowsAffected(), len(rows))
			}
			for _, i := range rows {
				stored[i] = asStored(q.entries[i])
			}
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation {
			// The only unique key of entries is its primary key. footprint_entry_in_way (the
			// conflict branch of a multi-row INSERT) names the row in its HINT (migration
			// 00013); no text of the error reaches a client.
			way := &turns.EntryInTheWay{}
			var named struct{ MemoryID, EntryID string }
			if json.Unmarshal([]byte(pgErr.Hint), &named) == nil {
				way.MemoryID, way.EntryID = named.MemoryID, named.EntryID
			} else if len(rows) == 1 {
				way.MemoryID, way.EntryID = q.entries[rows[0]].MemoryID, q.entries[rows[0]].ID
			}
			return nil, way
		}
		if err != nil {
			return nil, err
		}
	}
	n := q.fingerprints
	if q.links {
		n++
	}
	for range n {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	return stored, nil
}

// asStored is e as a read of its row returns it once inserted with entryArgs: timestamps at
// Postgres' microsecond precision in UTC (pgx truncates), absent metadata as {}.
func asStored(e core.Entry) core.Entry {
	at := func(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }
	e.CreatedAt, e.UpdatedAt, e.LastAccessedAt = at(e.CreatedAt), at(e.UpdatedAt), at(e.LastAccessedAt)
	if !e.ExpiresAt.IsZero() {
		e.ExpiresAt = at(e.ExpiresAt)
	}
	if len(e.Metadata) == 0 {
		e.Metadata = json.RawMessage(`{}`)
	}
	e.Lexical = nil // kept for rankings, never read back
	return e
}

// lockAndRead begins the transaction with begin's statements (Store.txBegin; none when it is
// open already), takes the namespace's advisory lock, then reads the highest live stored turn
// and the fingerprints of fpIDs: one pipelined batch.
func lockAndRead(ctx context.Context, c queryer, w turns.TurnWrite, memoryIDs, kinds, fpIDs []string, begin []string) (int, map[string]core.Fingerprint, error) {
	b := &pgx.Batch{}
	for _, stmt := range begin {
		b.Queue(stmt)
	}
	b.Queue(lockNamespaceSQL, w.Tenant, w.Namespace)
	if w.PrincipalNamespace != "" {
		// After the conversation's: every writer takes the two in this order.
		b.Queue(lockNamespaceSQL, w.Tenant, w.PrincipalNamespace)
	}
	sql, args := maxLiveTurn(w.Tenant, w.Namespace, memoryIDs, kinds, w.Now)
	if sh := w.Scope.Shared; sh != nil {
		sql, args = withSharedTurns(sql, args, sh, w.Now)
	}
	b.Queue(sql, args...)
	principalFPs := w.PrincipalFingerprintMemories
	if principalFPs == nil {
		principalFPs = []string{}
	}
	b.Queue(`SELECT memory_id, model, dims FROM embedding_fingerprints
		WHERE tenant = $1 AND ((namespace = $2 AND memory_id = ANY($3)) OR (namespace = $4 AND memory_id = ANY($5)))`,
		w.Tenant, w.Namespace, fpIDs, w.PrincipalNamespace, principalFPs)
	br := c.SendBatch(ctx, b)
	highest, have, err := readLockBatch(br, begin, w.PrincipalNamespace != "")
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, nil, err
	}
	return highest, have, nil
}

func readLockBatch(br pgx.BatchResults, begin []string, principalLock bool) (int, map[string]core.Fingerprint, error) {
	if err := readN(br, len(begin)); err != nil {
		return 0, nil, err
	}
	if _, err := br.Exec(); err != nil { // the lock
		return 0, nil, err
	}
	if principalLock {
		if _, err := br.Exec(); err != nil { // the principal's lock
			return 0, nil, err
		}
	}
	var highest int
	if err := br.QueryRow().Scan(&highest); err != nil {
		return 0, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return 0, nil, err
	}
	have := map[string]core.Fingerprint{}
	for rows.Next() {
		var f core.Fingerprint
		if err := rows.Scan(&f.MemoryID, &f.Model, &f.Dims); err != nil {
			rows.Close()
			return 0, nil, err
		}
		have[f.MemoryID] = f
	}
	rows.Close()
	return highest, have, rows.Err()
}

// claimKey claims an idempotency key inside the write's transaction, which its batch begins
// with begin's statements (Store.txBegin). A claim still in flight holds the row's lock, so the
// INSERT waits for that transaction: if it commits, the claim is replayed (or refused as
// reused); if it rolls back, this one claims the key. An expired claim is erased first. Returns
// the stored response to replay, or nil when claimed now.
func claimKey(ctx context.Context, t queryer, begin []string, tenant string, c turns.IdempotencyClaim, now time.Time) ([]byte, error) {
	b := &pgx.Batch{}
	for _, stmt := range begin {
		b.Queue(stmt)
	}
	b.Queue(`DELETE FROM idempotency_keys WHERE tenant = $1 AND key = $2 AND expires_at <= $3`, tenant, c.Key, now)
	b.Queue(`INSERT INTO idempotency_keys (tenant, key, request_hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, key) DO NOTHING`, tenant, c.Key, c.RequestHash, now, c.ExpiresAt)
	br := t.SendBatch(ctx, b)
	err := readN(br, len(begin))
	if err == nil {
		_, err = br.Exec()
	}
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 1 {
		return nil, nil
	}
	var hash, response []byte
	if err := t.QueryRow(ctx, `SELECT request_hash, response FROM idempotency_keys WHERE tenant = $1 AND key = $2`,
		tenant, c.Key).Scan(&hash, &response); err != nil {
		return nil, err
	}
	if !bytes.Equal(hash, c.RequestHash) {
		return nil, turns.ErrKeyReused
	}
	if response == nil {
		// Committed without a response: only a claim made by some other
		// kind of write could do that. Refuse rather than guess.
		return nil, turns.ErrKeyReused
	}
	return response, nil
}

// stamp fills what the store owns on a new row: version 1 and zero timestamps set to now.
func stamp(e core.Entry, now time.Time) core.Entry {
	e.Version = 1
	e.Supersedes = nil // the upsert records it
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = now
	}
	if e.LastAccessedAt.IsZero() {
		e.LastAccessedAt = now
	}
	return e
}

// ListEntries returns up to q.Limit live entries of the namespace, newest first: ORDER BY
// turn DESC NULLS LAST, idx DESC NULLS LAST (entries_newest_idx's order), then id and memory
// id descending, which makes the order total. Paging is keyset: the position is the last
// row's sort key, so a page never skips or repeats a row because of writes elsewhere. The
// key compares NULL turn as 0 and NULL idx as -1 (both below every stored value, as NULLS
// LAST puts them). limit <= 0 returns none.
func (s *Store) ListEntries(ctx context.Context, q core.EntryQuery) ([]core.Entry, string, error) {
	out := []core.Entry{}
	if q.Limit <= 0 {
		return out, "", nil
	}
	after, err := decodePosition(q.After)
	if err != nil {
		return nil, "", err
	}
	sql := `SELECT ` + entrySelectColumns(q.WithEmbedding) + ` FROM entries
		WHERE tenant = $1 AND namespace = $2
			AND ($3 = '' OR memory_id = $3) AND ($4 = '' OR kind = $4) AND ($5 = '' OR tier = $5)
			AND (expires_at IS NULL OR expires_at > $6)
			AND (NOT $7::boolean OR (coalesce(turn, 0), coalesce(idx, -1), id, memory_id) < ($8, $9, $10, $11))
		ORDER BY turn DESC NULLS LAST, idx DESC NULLS LAST, id DESC, memory_id DESC
		LIMIT $12`
	// One more than asked: whether there is a next page.
	rows, err := s.pool.Query(ctx, sql, q.Tenant, q.Namespace, q.MemoryID, string(q.Kind), q.Tier,
		q.Now, q.After != "", after.Turn, after.Idx, after.ID, after.MemoryID, q.Limit+1)
	if err != nil {
		return nil, "", translate(err, "list entries", "", "")
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, "", translate(err, "list entries", "", "")
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", translate(err, "list entries", "", "")
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	out = out[:q.Limit]
	return out, encodePosition(out[len(out)-1]), nil
}

// position is a place in the newest-first order of ListEntries: the sort key of the last
// entry of a page.
type position struct {
	Turn     int    `json:"t"`
	Idx      int    `json:"i"`
	ID       string `json:"id"`
	MemoryID string `json:"m"`
}

func encodePosition(e core.Entry) string {
	p := position{Turn: e.Turn, Idx: e.Index, ID: e.ID, MemoryID: e.MemoryID}
	if e.Turn == 0 && e.Index == 0 {
		p.Idx = -1
	}
	b, _ := json.Marshal(p) // cannot fail: strings and ints
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePosition(s string) (position, error) {
	var p position
	if s == "" {
		return p, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		return position{}, &core.ValidationError{Code: core.CodeInvalidField, Path: "after",
			Detail: "not a position returned by a previous page"}
	}
	return p, nil
}

// GetEntry returns one live entry, with its embedding. With touch it bumps access_count and
// sets last_accessed_at to now in the same statement (UPDATE ... RETURNING), so concurrent
// touches never lose a count.
func (s *Store) GetEntry(ctx context.Context, tenant, namespace, memoryID, id string, touch bool, now time.Time) (core.Entry, error) {
	const where = ` WHERE tenant = $1 AND memory_id = $2 AND namespace = $3 AND id = $4
		AND (expires_at IS NULL OR expires_at > $5)`
	sql := `SELECT ` + entryColumns + ` FROM entries` + where
	if touch {
		sql = `UPDATE entries SET access_count = access_count + 1, last_accessed_at = $5` + where +
			` RETURNING ` + entryColumns
	}
	e, err := scanEntry(s.pool.QueryRow(ctx, sql, tenant, memoryID, namespace, id, now))
	if err != nil {
		return core.Entry{}, translate(err, "get entry", "entry", id)
	}
	return e, nil
}

// ForgetNamespace erases, in one transaction, every entry of the namespace in every memory
// (expired ones included: they are counted too) and its embedding fingerprints. The entries go
// by entries_newest_idx's (tenant, namespace) prefix. It takes the namespace's turn-write lock
// first, so a forget never interleaves with a turn write.
func (s *Store) ForgetNamespace(ctx context.Context, tenant, namespace string) (int64, error) {
	var n int64
	err := s.tx(ctx, func(t pgx.Tx) error {
		// The namespace's turn-write lock: a forget never interleaves with a turn write.
		if _, err := t.Exec(ctx, lockNamespaceSQL, tenant, namespace); err != nil {
			return err
		}
		tag, err := t.Exec(ctx, `DELETE FROM entries WHERE tenant = $1 AND namespace = $2`, tenant, namespace)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if _, err = t.Exec(ctx, `DELETE FROM embedding_fingerprints WHERE tenant = $1 AND namespace = $2`, tenant, namespace); err != nil {
			return err
		}
		// A tombstone of the namespace and the time, nothing of the data: explain can then say
		// an origin entry was forgotten rather than merely missing.
		_, err = t.Exec(ctx, `INSERT INTO forgotten_namespaces (tenant, namespace, forgotten_at) VALUES ($1, $2, now())
			ON CONFLICT (tenant, namespace) DO UPDATE SET forgotten_at = EXCLUDED.forgotten_at`, tenant, namespace)
		return err
	})
	s.turns.forget()
	if err != nil {
		return 0, translate(err, "forget namespace", "", "")
	}
	return n, nil
}

// PutEntries inserts entries outside a turn (summaries); an id already stored and live is left
// as it is, an expired one is replaced.
func (s *Store) PutEntries(ctx context.Context, entries []core.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.tx(ctx, func(t pgx.Tx) error {
		b := &pgx.Batch{}
		now := time.Now().UTC()
		for _, e := range entries {
			e = stamp(e, now)
			b.Queue(upsertEntrySQL, append(entryArgs(e), now, false)...)
		}
		br := t.SendBatch(ctx, b)
		for range entries {
			if _, err := scanEntry(br.QueryRow()); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				_ = br.Close()
				return err
			}
		}
		return br.Close()
	})
	return translate(err, "put entries", "", "")
}

// CountWrittenFrom counts the live entries of namespace written from conversation.
func (s *Store) CountWrittenFrom(ctx context.Context, tenant, namespace, conversation string, now time.Time) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM entries WHERE tenant = $1 AND namespace = $2
		AND source_conversation = $3 AND (expires_at IS NULL OR expires_at > $4)`, tenant, namespace, conversation, now).Scan(&n)
	if err != nil {
		return 0, translate(err, "count entries", "", "")
	}
	return n, nil
}

// prefixEnd is the smallest string above every string starting with prefix, for an index range
// on a COLLATE "C" column (byte order). Namespace prefixes end in '/', whose successor is '0'.
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\xff" // unreachable for a namespace prefix
}

// ForgetPrincipal erases, in one transaction holding the principal namespace's lock (which every
// turn writing a principal-scoped memory takes), every entry of the principal's namespace and of
// the namespaces in [prefix, prefixEnd(prefix)) — the principal's conversations, ranges of
// entries_newest_idx's leading columns — with their fingerprints, turn links, tombstones, recall
// receipts, ablations and run recordings.
func (s *Store) ForgetPrincipal(ctx context.Context, tenant, principal, principalNS, prefix string) (turns.ForgetReport, error) {
	var rep turns.ForgetReport
	end := prefixEnd(prefix)
	err := s.tx(ctx, func(t pgx.Tx) error {
		rep = turns.ForgetReport{}
		if _, err := t.Exec(ctx, lockNamespaceSQL, tenant, principalNS); err != nil {
			return err
		}
		rows, err := t.Query(ctx, `WITH gone AS (
				DELETE FROM entries WHERE tenant = $1 AND namespace >= $2 AND namespace < $3 RETURNING namespace)
			SELECT namespace = $4, count(DISTINCT namespace), count(*) FROM gone GROUP BY namespace = $4`,
			tenant, prefix, end, principalNS)
		if err != nil {
			return err
		}
		for rows.Next() {
			var principalRows bool
			var namespaces, n int64
			if err := rows.Scan(&principalRows, &namespaces, &n); err != nil {
				rows.Close()
				return err
			}
			if principalRows {
				rep.PrincipalEntries = n
			} else {
				rep.Conversations, rep.ConversationEntries = namespaces, n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, table := range []string{"embedding_fingerprints", "turn_links", "forgotten_namespaces"} {
			b.Queue(`DELETE FROM `+table+` WHERE tenant = $1 AND namespace >= $2 AND namespace < $3`, tenant, prefix, end)
		}
		b.Queue(`DELETE FROM recalls WHERE tenant = $1 AND namespace >= $2 AND namespace < $3`, tenant, prefix, end)
		b.Queue(`DELETE FROM ablations WHERE tenant = $1 AND namespace >= $2 AND namespace < $3`, tenant, prefix, end)
		runsOf := `tenant = $1 AND (principal = $4 OR (namespace >= $2 AND namespace < $3))`
		b.Queue(`DELETE FROM run_events WHERE tenant = $1 AND run_id IN (SELECT id FROM runs WHERE `+runsOf+`)`, tenant, prefix, end, principal)
		b.Queue(`DELETE FROM runs WHERE `+runsOf, tenant, prefix, end, principal)
		br := t.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		counts := make([]int64, 7)
		for i := range counts {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			counts[i] = tag.RowsAffected()
		}
		rep.Recalls, rep.Ablations, rep.Runs = counts[3], counts[4], counts[6]
		return nil
	})
	if err != nil {
		return turns.ForgetReport{}, translate(err, "forget principal", "", "")
	}
	s.turns.forget()
	return rep, nil
}
