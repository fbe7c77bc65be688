package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/footprint/footprint/internal/core"
)

// SQLSTATE codes the store reacts to. See
// https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	codeUniqueViolation      = "23505"
	codeDivisionByZero       = "22012" // assertHighest's failed check
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeLockNotAvailable     = "55P03" // lock_timeout
	codeQueryCanceled        = "57014" // statement_timeout (caller cancellation is caught earlier)
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03" // starting up or shutting down
	codeReadOnlyTransaction  = "25006" // a write reached a standby during failover
	codeInternalError        = "XX000" // what Citus raises its own failures with (citusFailure)
)

// translate maps an error from pgx or Postgres to core's error kinds. It is the one place that
// decides what a driver error means; every exported method returns its errors through it.
//
//   - no rows: a *core.NotFoundError naming what and id;
//   - the caller's own cancellation: stays context.Canceled (wrapped with op), so the HTTP layer
//     can tell a client that went away from a failure;
//   - anything that may succeed if retried later (connection loss, server shutting down, lock
//     or statement timeout, deadline exceeded, retries of serialisation failures exhausted, a
//     Citus worker lost mid-transaction or at commit): wraps core.ErrUnavailable;
//   - anything else: wrapped with op, and treated as an internal error by callers.
//
// The original error stays in the chain (multi-%w) so logs carry the cause; callers only ever
// test for core's kinds.
func translate(err error, op, what, id string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &core.NotFoundError{What: what, ID: id}
	}
	// Before anything else: pgconn reports a cancelled query as a timeout (and Postgres may
	// answer 57014), but the caller chose to stop, which is not an outage.
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("%s: %w: %w", op, core.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// isUniqueViolation reports whether err is Postgres refusing a duplicate key. Callers know
// which key their statement can violate, so the constraint's name is never read: Citus
// suffixes it per shard, and a rename must not change what an error means.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation
}

// citusFailure is how a Citus coordinator fails a transaction when it lost a worker's
// connection at a point where the worker's error cannot be relayed: SQLSTATE XX000 (Citus gives
// these no code of their own, and relays a worker's own errors with the worker's SQLSTATE) and
// one of these messages (Citus does not translate its messages). outcomeUnknown: the failure
// came at COMMIT, after the worker may have committed (a one-phase commit whose answer was
// lost), so the transaction must not be redone as if nothing had been stored; the caller's
// idempotency key settles it. Any other XX000 stays an internal error.
var citusFailures = []struct {
	prefix         string
	outcomeUnknown bool
}{
	{"could not commit transaction for shard ", true},     // placement_connection.c, at COMMIT
	{"failure on connection marked as essential: ", true}, // remote_transaction.c, possibly at COMMIT
	{"failed to prepare transaction ", false},             // remote_transaction.c, 2PC: nothing committed
}

// citusFailure reports whether err is one of citusFailures, and whether its outcome is unknown.
func citusFailure(err error) (failed, outcomeUnknown bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != codeInternalError {
		return false, false
	}
	for _, f := range citusFailures {
		if strings.HasPrefix(pgErr.Message, f.prefix) {
			return true, f.outcomeUnknown
		}
	}
	return false, false
}

// unavailable reports whether err is transient: the database is unreachable, shutting down, or
// too busy to answer in time.
func unavailable(err error) bool {
	if failed, _ := citusFailure(err); failed {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeLockNotAvailable, codeQueryCanceled,
			codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow,
			codeSerializationFailure, codeDeadlockDetected, codeReadOnlyTransaction:
			return true
		}
		// Class 08: connection exception. Class 53: insufficient resources (too many
		// connections, out of memory, disk full).
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53")
	}
	// A deadline (the request's, or waiting for a pool connection) expired while the database
	// was slow to answer.
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// The server closed the connection mid-conversation.
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed)
}

// retryable reports whether a transaction failed only because it lost a race that running it
// again can win: a serialisation failure or a deadlock. Postgres rolled it back as a whole, so
// nothing of it took effect.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == codeSerializationFailure || pgErr.Code == codeDeadlockDetected)
}
