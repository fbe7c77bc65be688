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
	"github.com/footprint/footprint/internal/store/pg/pgcluster"
	"github.com/footprint/footprint/migrations"
)

// Environment variables read by DSN.
const (
	EnvDatabaseURL  = "TEST_DATABASE_URL"
	EnvRequirePG    = "FOOTPRINT_REQUIRE_PG"
	EnvRequireCitus = "FOOTPRINT_REQUIRE_CITUS"
)

// templateLockKey is the pg_advisory_lock key that serialises template creation across test
// processes (go test ./... runs each package in its own process, all at once). Advisory locks
// are per database, and every process takes this one on the admin database of the URL.
const templateLockKey int64 = 0x666f6f7470726e74 // "footprnt"

// setupTimeout bounds creating the template (and waiting for another process to create it).
const setupTimeout = 2 * time.Minute

// template is built at most once per process; its name and cluster, or the error that
// prevented it.
var template = sync.OnceValues(buildTemplate)

// templateDB is a built template and the cluster it lives on.
type templateDB struct {
	name    string
	cluster *pgcluster.Cluster
}

// TemplateShardCount is citus.shard_count while the template is migrated on Citus: every
// distributed table of a test database has this many shards. Few, because each shard is a
// table (and its indexes) on a worker, which every per-test clone copies: 4 shards per table
// clone about twice as fast as Citus' default 32, and still spread each table over both
// workers of the test cluster.
const TemplateShardCount = 4

// DSN returns the DSN of a new database, migrated to the current schema, that only this test
// uses; it is dropped when the test and its subtests finish. It skips the test when
// TEST_DATABASE_URL is unset, or fails it if FOOTPRINT_REQUIRE_PG=1.
//
// On a Citus coordinator the database is a clone of the template on every node of the
// cluster (pgcluster), with every tenant table distributed as the migrations leave it.
func DSN(t *testing.T) string {
	t.Helper()
	baseURL(t)
	tpl, err := template()
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	c := tpl.cluster
	name := "footprint_t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	// Registered first: a clone that failed on one node may exist on the others.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Sealed first: a test that failed half-way may have left connections open.
		if err := c.Drop(ctx, name); err != nil {
			t.Errorf("pgtest: drop test database %s: %v", name, err)
		}
	})
	if err := c.Clone(ctx, name, tpl.name); err != nil {
		t.Fatalf("pgtest: create test database: %v", err)
	}
	dsn, err := c.DSN(name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Citus reports whether the tests run on a Citus cluster (TEST_DATABASE_URL is a coordinator),
// skipping or failing t as DSN does when there is no database at all.
func Citus(t *testing.T) bool {
	t.Helper()
	baseURL(t)
	tpl, err := template()
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	return tpl.cluster.Citus()
}

// RequireCitus ends t unless TEST_DATABASE_URL is a Citus coordinator (scripts/test-citus.sh
// start prints one): it skips, or fails when FOOTPRINT_REQUIRE_CITUS=1, which make test-citus
// sets so that no Citus test can pass by skipping.
func RequireCitus(t *testing.T) {
	t.Helper()
	if Citus(t) {
		return
	}
	if os.Getenv(EnvRequireCitus) == "1" {
		t.Fatalf("%s=1 but %s is not a Citus coordinator (start one with: export %s=$(scripts/test-citus.sh start))",
			EnvRequireCitus, EnvDatabaseURL, EnvDatabaseURL)
	}
	t.Skipf("%s is not a Citus coordinator (make test-citus runs this)", EnvDatabaseURL)
}

// SkipOnCitus skips t when the tests run on Citus: t inspects what only a single node has
// (its test says which test covers the same on Citus).
func SkipOnCitus(t *testing.T, instead string) {
	t.Helper()
	if Citus(t) {
		t.Skipf("single-node internals; on Citus %s covers this", instead)
	}
}

// Cluster returns the cluster TEST_DATABASE_URL belongs to, as DSN does.
func Cluster(t *testing.T) *pgcluster.Cluster {
	t.Helper()
	baseURL(t)
	tpl, err := template()
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	return tpl.cluster
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
// and returns it. Holding the advisory lock, it builds the template under a temporary name and
// renames it only when migrations succeeded, so a process killed half-way never leaves a
// half-migrated template that later runs would trust. On Citus the template exists on every
// node, and is migrated through the coordinator with TemplateShardCount shards per table.
func buildTemplate() (templateDB, error) {
	base := os.Getenv(EnvDatabaseURL)
	hash, err := migrationsHash()
	if err != nil {
		return templateDB{}, err
	}
	tpl := templateDB{name: "footprint_tpl_" + hash}
	building := tpl.name + "_building"

	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if tpl.cluster, err = pgcluster.Open(ctx, base); err != nil {
		return templateDB{}, fmt.Errorf("cluster: %w", err)
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return templateDB{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// A session lock: CREATE DATABASE cannot run inside a transaction, so a transaction-level
	// lock could not cover it. Closing the connection releases it even if we fail.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return templateDB{}, fmt.Errorf("lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // closing the connection releases it anyway

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", tpl.name).Scan(&exists); err != nil {
		return templateDB{}, err
	}
	if exists {
		return tpl, nil
	}
	c := tpl.cluster
	if err := c.Drop(ctx, building); err != nil {
		return templateDB{}, err
	}
	if err := c.Create(ctx, building); err != nil {
		return templateDB{}, err
	}
	dsn, err := c.DSN(building)
	if err != nil {
		return templateDB{}, err
	}
	if c.Citus() {
		// A session setting of the migrating connection; a clone keeps the shards it made.
		if dsn, err = withOption(dsn, fmt.Sprintf("-c citus.shard_count=%d", TemplateShardCount)); err != nil {
			return templateDB{}, err
		}
	}
	if err := pg.Migrate(ctx, dsn, nil); err != nil {
		return templateDB{}, fmt.Errorf("migrate %s: %w", building, err)
	}
	// Migrate has closed its connections; a template must have none when it is cloned.
	// Sealed (ALLOW_CONNECTIONS false) it stays that way: no stray psql session, and on Citus no
	// maintenance daemon, can break cloning.
	if err := c.Seal(ctx, building); err != nil {
		return templateDB{}, err
	}
	if err := c.Rename(ctx, building, tpl.name); err != nil {
		return templateDB{}, err
	}
	return tpl, nil
}

// withOption adds a server option (-c name=value) to a DSN's startup options.
func withOption(dsn, option string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvDatabaseURL, err)
		}
		q := u.Query()
		q.Set("options", strings.TrimSpace(q.Get("options")+" "+option))
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads + literally
		return u.String(), nil
	}
	return dsn + " options='" + option + "'", nil
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

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
