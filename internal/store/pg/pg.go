// Package pg is footprint's Postgres store: core.Store over pgx v5 and pgvector.
//
// The package is the one place that knows SQL, pgx and Postgres error codes. Rows become core
// values in rows.go, driver errors become core's error kinds in errors.go, and every
// multi-statement operation runs through the one transaction helper in tx.go. Nothing
// pgx-typed crosses the package boundary, so core and the HTTP layer never depend on the
// driver.
//
// The schema lives in the migrations package; Open applies it before serving.
package pg

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/core/turns"
)

// Defaults for the per-session timeouts Open sets. They bound how long one request can hold a
// connection or wait behind another transaction's row lock, so that a stuck statement turns
// into ErrUnavailable (503 with Retry-After) instead of exhausting the pool.
const (
	DefaultStatementTimeout = 5 * time.Second
	DefaultLockTimeout      = 2 * time.Second
)

// Store is the Postgres implementation of core.Store. It is safe for concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	logger  *slog.Logger
	runs    runState       // run recordings' tail cache and retention (runs.go)
	turns   *turnPredictor // what this process knows of namespaces' turns (turncache.go)
	commits committer      // shared transactions of predicted turn writes (turncommit.go)
	tel     telemetry      // tracing and the commit observer (telemetry.go)
	// exactCorpusDocs: a corpus of at most this many chunks with terms is ranked lexically by
	// the exact scan (rankCorpusLexical).
	exactCorpusDocs int

	// distributed: the database is a Citus coordinator with the tenant tables distributed
	// (citus.go); lockTimeout is the sessions' lock_timeout, which write transactions then
	// carry to the workers.
	distributed bool
	lockTimeout string
}

// The Store serves every area of the domain.
var (
	_ memories.Store = (*Store)(nil)
	_ turns.Store    = (*Store)(nil)
	_ recall.Store   = (*Store)(nil)
	_ runs.Store     = (*Store)(nil)
	_ explain.Store  = (*Store)(nil)
	_ core.Sweeper   = (*Store)(nil)
)

// Option configures Open.
type Option func(*options)

type options struct {
	statementTimeout *time.Duration
	lockTimeout      *time.Duration
	maxConns         int32
	migrate          bool
	tel              telemetry
	exactCorpusDocs  int // corpora of at most this many chunks are ranked lexically by an exact scan
}

// WithStatementTimeout sets the session's statement_timeout (0 disables it). Without this
// option a statement_timeout given in the DSN is kept, else DefaultStatementTimeout applies.
func WithStatementTimeout(d time.Duration) Option {
	return func(o *options) { o.statementTimeout = &d }
}

// WithLockTimeout sets the session's lock_timeout (0 disables it). Without this option a
// lock_timeout given in the DSN is kept, else DefaultLockTimeout applies.
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = &d }
}

// WithMaxConns caps the connection pool. Without it the DSN's pool_max_conns applies, else
// pgxpool's default (the larger of 4 and the number of CPUs).
func WithMaxConns(n int32) Option {
	return func(o *options) { o.maxConns = n }
}

// WithoutMigrations skips applying migrations in Open, for deployments that migrate in a
// separate step (with Migrate) or connect with a role that may not run DDL.
func WithoutMigrations() Option {
	return func(o *options) { o.migrate = false }
}

// Open connects to the database at dsn (a postgres:// URL or key=value string), applies any
// pending migrations (see Migrate) and returns a ready Store. The caller must Close it.
//
// Migrations run on a separate database/sql connection before the pool exists: every pool
// connection registers the pgvector codecs when it is made, and that needs the vector
// extension, which the first migration creates. logger may be nil (nothing is logged).
//
// A database that cannot be reached is reported as core.ErrUnavailable, so that callers can
// tell "retry later" from a bad configuration.
func Open(ctx context.Context, dsn string, logger *slog.Logger, opts ...Option) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	o := options{migrate: true, exactCorpusDocs: exactCorpusDocs}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn redacts the password from parse errors.
		return nil, fmt.Errorf("pg: parse DSN: %w", err)
	}
	params := cfg.ConnConfig.RuntimeParams
	setTimeout(params, "statement_timeout", o.statementTimeout, DefaultStatementTimeout)
	setTimeout(params, "lock_timeout", o.lockTimeout, DefaultLockTimeout)
	if params["application_name"] == "" {
		// Makes our sessions recognisable in pg_stat_activity.
		params["application_name"] = "footprint"
	}
	if o.maxConns > 0 {
		cfg.MaxConns = o.maxConns
	}

	var ci clusterInfo
	if o.migrate {
		ci, err = migrate(ctx, cfg.ConnConfig.Copy(), logger)
	} else {
		ci, err = probe(ctx, cfg.ConnConfig.Copy())
	}
	if err != nil {
		return nil, err
	}
	if ci.distributed {
		distributedParams(params)
	} else if ci.citus {
		logger.WarnContext(ctx, "pg: the citus extension is installed but the tables are not distributed; "+
			"run SELECT footprint_distribute() on the coordinator to distribute them (docs/scale-out.md)")
	}

	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		return pgxvec.RegisterTypes(ctx, conn)
	}
	o.tel.instrument(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pg: create pool: %w", err)
	}
	// pgxpool connects lazily; connect now so a wrong host, password or missing extension
	// fails start-up rather than the first request.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate(err, "pg: connect", "", "")
	}
	return &Store{pool: pool, logger: logger, turns: newTurnPredictor(), tel: o.tel, exactCorpusDocs: o.exactCorpusDocs,
		distributed: ci.distributed, lockTimeout: params["lock_timeout"]}, nil
}

// probe connects once to learn what kind of database this is (citus.go), and refuses a Citus
// worker.
func probe(ctx context.Context, cc *pgx.ConnConfig) (clusterInfo, error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return clusterInfo{}, translate(err, "pg: connect", "", "")
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ci, err := probeCluster(ctx, conn)
	if err != nil {
		return clusterInfo{}, translate(err, "pg: probe the database", "", "")
	}
	return ci, ci.checkCoordinator()
}

// setTimeout sets a duration runtime parameter: an explicit option wins, then a value already
// in the DSN, then the default. Postgres reads a bare number as milliseconds.
func setTimeout(params map[string]string, name string, explicit *time.Duration, def time.Duration) {
	switch {
	case explicit != nil:
		params[name] = strconv.FormatInt(explicit.Milliseconds(), 10)
	case params[name] != "":
	default:
		params[name] = strconv.FormatInt(def.Milliseconds(), 10)
	}
}

// Close waits for in-flight queries to finish and closes every connection. The Store must not
// be used afterwards.
func (s *Store) Close() {
	s.pool.Close()
}

// Ping reports whether the database answers, for /readyz. A failure wraps core.ErrUnavailable.
//
// After the server dropped connections (a restart, pg_terminate_backend), the pool may still
// hold some that are dead without knowing it; a ping on one fails and discards it. So a failed
// ping is tried again, a few times, before the database is declared unreachable: a single dead
// pooled connection must not take the instance out of a load balancer.
func (s *Store) Ping(ctx context.Context) error {
	var err error
	for range pingAttempts {
		if err = s.pool.Ping(ctx); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return translate(err, "ping", "", "")
	}
	return nil
}

// pingAttempts bounds Ping's attempts.
const pingAttempts = 3

// Info describes this store for /v1/capabilities: Postgres ranks vectors with pgvector.
func (s *Store) Info() core.StoreInfo {
	return core.StoreInfo{Kind: "postgres", RanksVectors: true}
}
