package pg

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Transaction retry policy: bounded, because a retry loop without a bound turns contention
// into an outage; jittered, so the losers of one race do not collide again in lock step.
const (
	txAttempts    = 3
	txBaseBackoff = 10 * time.Millisecond
	// rollbackTimeout bounds a rollback that runs after the caller's context is done.
	rollbackTimeout = 5 * time.Second
)

// tx runs fn in one READ COMMITTED transaction and commits it. It is the only way this package
// runs more than one statement atomically.
//
// If fn or the commit fails with a serialisation failure or deadlock (40001, 40P01), Postgres
// has rolled back everything and the whole transaction is run again, up to txAttempts times in
// all. fn must therefore do nothing outside the database (no network calls, no writes to
// caller state it cannot repeat), and must re-read whatever it decides on. Every other error
// is returned as is, untranslated: callers translate, because only they know what a missing
// row means.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	return withRetry(ctx, func() error { return s.txOnce(ctx, fn) })
}

// txOnce is one attempt of tx. The commit error is returned, never dropped: a failed commit
// means nothing was stored.
func (s *Store) txOnce(ctx context.Context, fn func(pgx.Tx) error) (err error) {
	t, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		// Roll back even if ctx is done (that is often why we are here): otherwise the
		// connection returns to the pool mid-transaction and pgx must discard it. Bounded,
		// because a dead server would otherwise hold us until TCP gives up.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if rerr := t.Rollback(rctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			s.logger.WarnContext(ctx, "pg: rollback failed", "error", rerr, "cause", err)
		}
	}()
	if s.distributed {
		// The lock_timeout for the workers (txBegin): a round trip of its own, since fn's
		// statements are its to send.
		if _, err := t.Exec(ctx, s.setLockTimeout()); err != nil {
			return err
		}
	}
	if err := fn(t); err != nil {
		return err
	}
	return t.Commit(ctx)
}

// queryer runs statements: a pgx.Tx, or a *pgx.Conn inside a transaction that pipelinedTx's
// caller opened.
type queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// pipelinedTx runs fn on one pooled connection; fn opens and commits its own transaction by
// queueing BEGIN at the head of its first batch and COMMIT at the tail of its last, so that a
// transaction of two pipelined batches costs two round trips rather than four (BEGIN and
// COMMIT each add one with tx). Whatever fn returns, the connection never goes back to the
// pool inside a transaction: one left open or failed (a statement's error makes Postgres skip
// the rest of its batch, COMMIT included) is rolled back, and one that cannot be is discarded.
// It is one attempt; wrap it in withRetry as tx does.
func (s *Store) pipelinedTx(ctx context.Context, fn func(*pgx.Conn) error) (err error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release() // pgxpool discards a connection that is closed or not idle
	c := pc.Conn()
	err = fn(c)
	if st := c.PgConn().TxStatus(); st != 'I' && !c.IsClosed() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		if _, rerr := c.Exec(rctx, "ROLLBACK"); rerr != nil {
			s.logger.WarnContext(ctx, "pg: rollback failed", "error", rerr, "cause", err)
		}
		if err == nil {
			err = errors.New("pg: transaction left open")
		}
	}
	return err
}

// withRetry calls attempt until it succeeds, fails with an error that retryable rejects, or
// txAttempts calls have been made, sleeping a short jittered backoff between calls. It gives
// up early, returning the last error, if ctx is done.
func withRetry(ctx context.Context, attempt func() error) error {
	var err error
	for i := range txAttempts {
		if err = attempt(); err == nil || !retryable(err) || i == txAttempts-1 || ctx.Err() != nil {
			return err
		}
		// Exponential with full jitter: 0–10ms, 0–20ms, ...
		backoff := time.Duration(rand.Int64N(int64(txBaseBackoff << i)))
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
	}
	return err
}
