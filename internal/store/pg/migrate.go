package pg

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/footprint/footprint/migrations"
)

// Migrate applies every pending embedded migration to the database at dsn and returns when
// the schema is current. Open calls it; it is exported for tools and test harnesses that
// prepare a database without serving from it.
//
// It is safe to run from many processes at once (replicas starting together, parallel test
// packages): goose holds a Postgres session advisory lock for the whole run, so one process
// migrates and the others wait, then find nothing pending. Advisory locks are per database,
// so migrating different databases never contends.
func Migrate(ctx context.Context, dsn string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("pg: parse DSN: %w", err)
	}
	_, err = migrate(ctx, cc, logger)
	return err
}

// migrate applies the migrations and returns what it learnt of the database afterwards.
func migrate(ctx context.Context, cc *pgx.ConnConfig, logger *slog.Logger) (clusterInfo, error) {
	// DDL may legitimately run longer than a request (building an index on a large table), so
	// the request-sized statement_timeout does not apply here. lock_timeout still does: a
	// migration queued behind a long transaction would block every query behind it.
	cc.RuntimeParams["statement_timeout"] = "0"
	// DDL on a Citus worker fails ("operation is not allowed on this node"), and a replica
	// connected to one would not share the coordinator's advisory locks: refuse it plainly.
	if _, err := probe(ctx, cc.Copy()); err != nil {
		return clusterInfo{}, err
	}
	db := stdlib.OpenDB(*cc)
	defer db.Close()

	// Poll the advisory lock every second for up to five minutes: long enough for another
	// replica's migration to finish, short enough that a wedged one surfaces as an error.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return clusterInfo{}, fmt.Errorf("pg: migration locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker),
		// Only the embedded SQL files: no Go migrations registered by other packages' init.
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(logger),
	)
	if err != nil {
		return clusterInfo{}, fmt.Errorf("pg: migration provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return clusterInfo{}, translate(err, "pg: migrate", "", "")
	}
	for _, r := range results {
		logger.InfoContext(ctx, "applied migration",
			slog.String("file", r.Source.Path),
			slog.Int64("version", r.Source.Version),
			slog.Duration("took", r.Duration))
	}
	// On a distributed database, tables that migrations after 00019 created are distributed
	// (co-located) as soon as they exist: footprint_distribute() does nothing when every table
	// is. Not on a Citus database whose tables are still local: distributing copies every row,
	// which is an operator's decision (docs/scale-out.md), never a side effect of a start.
	ci, err := probe(ctx, cc.Copy())
	if err != nil {
		return clusterInfo{}, err
	}
	if ci.distributed {
		var n int
		if err := db.QueryRowContext(ctx, distributeSQL).Scan(&n); err != nil {
			return clusterInfo{}, translate(err, "pg: distribute new tables", "", "")
		}
		if n > 0 {
			logger.InfoContext(ctx, "distributed new tables", slog.Int("tables", n))
		}
	}
	return ci, nil
}
