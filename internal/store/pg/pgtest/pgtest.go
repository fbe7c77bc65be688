// Package pgtest gives tests a fresh, fully migrated Postgres database each, cheaply.
//
// The server comes from TEST_DATABASE_URL (scripts/test-postgres.sh start prints one). Without
// it Postgres tests skip, unless FOOTPRINT_REQUIRE_PG=1, when they fail: CI sets that so a
// missing database can never pass as a green run.
//
// Once per test process, a template database named after a hash of the embedded migrations is
// built (or found, if another process built it) and migrated; every DSN call then clones it
// with CREATE DATABASE ... TEMPLATE, which copies files instead of replaying migrations, and
// drops the clone when the test ends. Tests are therefore isolated from each other, may run
// in parallel, and see exactly the schema the binary would create.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/migrations"
)

// Environment variables read by DSN.
const (
	EnvDatabaseURL = "TEST_DATABASE_URL"
	EnvRequirePG   = "FOOTPRINT_REQUIRE_PG"
)

// templateLockKey is the pg_advisory_lock key that serialises template creation across test
// processes (go test ./... runs each package in its own process, all at once). Advisory locks
// are per database, and every process takes this one on the admin database of the URL.
const templateLockKey int64 = 0x666f6f7470726e74 // "footprnt"

// setupTimeout bounds creating the template (and waiting for another process to create it).
const setupTimeout = 2 * time.Minute

// template is built at most once per process; its name, or the error that prevented it.
var template = sync.OnceValues(buildTemplate)

// DSN returns the DSN of a new database, migrated to the current schema, that only this test
// uses; it is dropped when the test and its subtests finish. It skips the test when
// TEST_DATABASE_URL is unset, or fails it if FOOTPRINT_REQUIRE_PG=1.
func DSN(t *testing.T) string {
	t.Helper()
	base := baseURL(t)
	tpl, err := template()
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}

	name := "footprint_t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := adminExec(ctx, base, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+
		" TEMPLATE "+pgx.Identifier{tpl}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE: a test that failed half-way may have left connections open.
		if err := adminExec(ctx, base, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop test database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Open returns a *pg.Store on a fresh database (see DSN), closed when the test finishes. Its
// pool is kept small so that many parallel tests fit in the server's max_connections.
func Open(t *testing.T, opts ...pg.Option) *pg.Store {
	t.Helper()
	dsn := DSN(t)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts = append([]pg.Option{pg.WithMaxConns(4)}, opts...)
	s, err := pg.Open(t.Context(), dsn, logger, opts...)
	if err != nil {
		t.Fatalf("pgtest: open store: %v", err)
	}
	// Registered after DSN's cleanup, so it runs before the database is dropped.
	t.Cleanup(s.Close)
	return s
}

// baseURL returns TEST_DATABASE_URL, or ends the test (skip or fail) when it is unset.
func baseURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv(EnvDatabaseURL)
	if base != "" {
		return base
	}
	if os.Getenv(EnvRequirePG) == "1" {
		t.Fatalf("%s is not set but %s=1: Postgres tests must run (start one with: export %s=$(scripts/test-postgres.sh start))",
			EnvDatabaseURL, EnvRequirePG, EnvDatabaseURL)
	}
	t.Skipf("%s not set", EnvDatabaseURL)
	return ""
}

// buildTemplate makes sure footprint_tpl_<hash of migrations> exists and is fully migrated,
// and returns its name. Holding the advisory lock, it builds the template under a temporary
// name and renames it only when migrations succeeded, so a process killed half-way never
// leaves a half-migrated template that later runs would trust.
func buildTemplate() (string, error) {
	base := os.Getenv(EnvDatabaseURL)
	hash, err := migrationsHash()
	if err != nil {
		return "", err
	}
	tpl := "footprint_tpl_" + hash
	building := tpl + "_building"

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A session lock: CREATE DATABASE cannot run inside a transaction, so a transaction-level
	// lock could not cover it. Closing the connection releases it even if we fail.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // closing the connection releases it anyway

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tpl).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return tpl, nil
	}
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + pgx.Identifier{building}.Sanitize() + " WITH (FORCE)",
		"CREATE DATABASE " + pgx.Identifier{building}.Sanitize(),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", err
		}
	}
	dsn, err := withDatabase(base, building)
	if err != nil {
		return "", err
	}
	if err := pg.Migrate(ctx, dsn, nil); err != nil {
		return "", fmt.Errorf("migrate %s: %w", building, err)
	}
	// Migrate has closed its connections; a template must have none when it is cloned.
	// ALLOW_CONNECTIONS false keeps it that way (no stray psql session can break cloning).
	for _, sql := range []string{
		"ALTER DATABASE " + pgx.Identifier{building}.Sanitize() + " RENAME TO " + pgx.Identifier{tpl}.Sanitize(),
		"ALTER DATABASE " + pgx.Identifier{tpl}.Sanitize() + " WITH ALLOW_CONNECTIONS false",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return "", err
		}
	}
	return tpl, nil
}

// migrationsHash identifies the schema: the names and contents of every embedded migration.
// A changed or added migration yields a new template; old templates are left for the
// throwaway test cluster to hold (drop them with DROP DATABASE after ALTER DATABASE ...
// ALLOW_CONNECTIONS true, or delete the cluster).
func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// adminExec runs one statement on its own connection to the base database. CREATE and DROP
// DATABASE cannot share a transaction, and a short-lived connection per call keeps no
// session state between tests.
func adminExec(ctx context.Context, base, sql string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase returns base pointing at database name. It accepts URLs
// (postgres://...) and keyword/value strings (host=... dbname=...).
func withDatabase(base, name string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvDatabaseURL, err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return base + " dbname=" + name, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
