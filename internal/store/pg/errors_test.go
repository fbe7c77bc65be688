package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/footprint/footprint/internal/core"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	pgErr := func(code, constraint string) error {
		return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, ConstraintName: constraint})
	}
	citusErr := func(msg string) error {
		return fmt.Errorf("commit: %w", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "XX000", Message: msg})
	}
	opErr := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	tests := []struct {
		name string
		err  error
		// want is the core kind errors.Is must find; nil means none of them (internal).
		want error
	}{
		{"no rows", pgx.ErrNoRows, core.ErrNotFound},
		{"other unique violation", pgErr(codeUniqueViolation, "entries_pkey"), nil},
		{"lock timeout", pgErr(codeLockNotAvailable, ""), core.ErrUnavailable},
		{"statement timeout", pgErr(codeQueryCanceled, ""), core.ErrUnavailable},
		{"admin shutdown", pgErr(codeAdminShutdown, ""), core.ErrUnavailable},
		{"crash shutdown", pgErr(codeCrashShutdown, ""), core.ErrUnavailable},
		{"cannot connect now", pgErr(codeCannotConnectNow, ""), core.ErrUnavailable},
		{"connection failure (class 08)", pgErr("08006", ""), core.ErrUnavailable},
		{"too many connections", pgErr("53300", ""), core.ErrUnavailable},
		{"serialisation retries exhausted", pgErr(codeSerializationFailure, ""), core.ErrUnavailable},
		{"deadlock retries exhausted", pgErr(codeDeadlockDetected, ""), core.ErrUnavailable},
		{"standby during failover", pgErr(codeReadOnlyTransaction, ""), core.ErrUnavailable},
		{"network error", fmt.Errorf("query: %w", opErr), core.ErrUnavailable},
		{"connection closed", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), core.ErrUnavailable},
		{"deadline or pool acquire timeout", fmt.Errorf("acquire: %w", context.DeadlineExceeded), core.ErrUnavailable},
		{"caller cancelled", fmt.Errorf("query: %w", context.Canceled), context.Canceled},
		{"caller cancelled, server said 57014", errors.Join(context.Canceled, pgErr(codeQueryCanceled, "")), context.Canceled},
		// Citus (citus.go): a worker lost at commit, or before its PREPARE answered; a worker's
		// own error arrives with the worker's SQLSTATE, and any other XX000 is internal.
		{"citus: commit on a worker unknown", citusErr("could not commit transaction for shard 102106 on at least one active node"), core.ErrUnavailable},
		{"citus: essential connection failed", citusErr("failure on connection marked as essential: 10.0.0.7:5432"), core.ErrUnavailable},
		{"citus: prepare failed", citusErr("failed to prepare transaction 'citus_0_1_2_3' on host 10.0.0.7:5432"), core.ErrUnavailable},
		{"citus: relayed admin shutdown", &pgconn.PgError{Code: codeAdminShutdown, Where: "while executing command on 10.0.0.7:5432"}, core.ErrUnavailable},
		{"citus: other internal error", citusErr("could not create distributed plan"), nil},
		{"syntax error", pgErr("42601", ""), nil},
		{"check violation", pgErr("23514", "memories_tier_check"), nil},
	}
	kinds := []error{core.ErrNotFound, core.ErrConflict, core.ErrUnavailable, core.ErrInvalid, context.Canceled}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err, "op", "memory", "chat")
			for _, kind := range kinds {
				if is, want := errors.Is(got, kind), kind == tc.want; is != want {
					t.Errorf("errors.Is(translate(%v), %v) = %v, want %v", tc.err, kind, is, want)
				}
			}
			if tc.want == core.ErrUnavailable && !errors.Is(got, tc.err) {
				t.Errorf("translate(%v) = %v: the cause is not in the chain", tc.err, got)
			}
		})
	}

	t.Run("not found names the memory", func(t *testing.T) {
		var nf *core.NotFoundError
		if err := translate(pgx.ErrNoRows, "op", "memory", "chat"); !errors.As(err, &nf) || nf.What != "memory" || nf.ID != "chat" {
			t.Errorf("translate(ErrNoRows) = %#v", err)
		}
	})
	if translate(nil, "op", "", "") != nil {
		t.Error("translate(nil) != nil")
	}
}

func TestWithRetry(t *testing.T) {
	t.Parallel()
	serialization := &pgconn.PgError{Code: codeSerializationFailure}
	deadlock := &pgconn.PgError{Code: codeDeadlockDetected}
	other := errors.New("boom")
	unique := &pgconn.PgError{Code: codeUniqueViolation}
	tests := []struct {
		name      string
		results   []error // what successive attempts return; nil beyond the end
		wantCalls int
		wantErr   error
	}{
		{"success", nil, 1, nil},
		{"retried serialisation failure", []error{serialization, deadlock}, 3, nil},
		{"bounded", []error{serialization, serialization, serialization, serialization}, txAttempts, serialization},
		{"other errors are not retried", []error{other}, 1, other},
		{"unique violation is not retried", []error{unique}, 1, unique},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := withRetry(t.Context(), func() error {
				calls++
				if calls <= len(tc.results) {
					return tc.results[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls {
				t.Errorf("attempts = %d, want %d", calls, tc.wantCalls)
			}
			if err != tc.wantErr {
				t.Errorf("error = %v, want %v", err, tc.wantErr)
			}
		})
	}

	t.Run("stops when the context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		err := withRetry(ctx, func() error { calls++; cancel(); return serialization })
		if calls != 1 || err != serialization {
			t.Errorf("attempts = %d, error = %v; want 1, the serialisation failure", calls, err)
		}
	})
}

// TestRedoableCitus: a Citus failure at commit may have committed on the worker, so a shared
// transaction that met it is not redone; one at PREPARE (two-phase commit) stored nothing.
func TestRedoableCitus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{"could not commit transaction for shard 102106 on at least one active node", false},
		{"failure on connection marked as essential: 10.0.0.7:5432", false},
		{"failed to prepare transaction 'citus_0_1_2_3' on host 10.0.0.7:5432", true},
		{"division by zero", true},
	} {
		err := &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "XX000", Message: tc.msg}
		if got := redoable(err); got != tc.want {
			t.Errorf("redoable(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}
