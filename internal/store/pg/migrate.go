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
	return migrate(ctx, cc, logger)
}

func migrate(ctx context.Context, cc *pgx.ConnConfig, logger *slog.Logger) error {
	// DDL may legitimately run longer than a request (building an index on a large table), so
	// the request-sized statement_timeout does not apply here. lock_timeout still does: a
	// migration queued behind a long transaction would block every query behind it.
	cc.RuntimeParams["statement_timeout"] = "0"
	db := stdlib.OpenDB(*cc)
	defer db.Close()

	// Poll the advisory lock every second for up to five minutes: long enough for another
	// replica's migration to finish, short enough that a wedged one surfaces as an error.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return fmt.Errorf("pg: migration locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker),
		// Only the embedded SQL files: no Go migrations registered by other packages' init.
		goose.WithDisableGlobalRegistry(true),
		goose.WithSlog(logger),
	)
	if err != nil {
		return fmt.Errorf("pg: migration provider: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return translate(err, "pg: migrate", "", "")
	}
	for _, r := range results {
		logger.InfoContext(ctx, "applied migration",
			slog.String("file", r.Source.Path),
			slog.Int64("version", r.Source.Version),
			slog.Duration("took", r.Duration))
	}
	return nil
}
