package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/store/pg/pgcluster"
)

// CreateDatabase creates <prefix><random> on the server adminDSN points at
// and returns its DSN and a function that drops it (FORCE). The drop reports
// its failure on stderr as "<command>: drop database <name>: <error>".
func CreateDatabase(ctx context.Context, adminDSN, prefix, command string) (string, func(), error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := prefix + hex.EncodeToString(rnd[:])
	conn, err := pgx.Connect(ctx, adminDSN)
	if err != nil {
		return "", nil, fmt.Errorf("connect (admin DSN): %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(dctx, adminDSN)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: drop database %s: %v\n", command, name, err)
			return
		}
		defer c.Close(dctx)
		if _, err := c.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "%s: drop database %s: %v\n", command, name, err)
		}
	}
	dsn, err := withDatabase(adminDSN, name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return dsn, drop, nil
}

// withDatabase is dsn (URL or keyword/value form) pointed at database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("parse DSN: invalid URL")
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

// DBName is the database dsn names, or "?" when it does not parse.
func DBName(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "?"
	}
	return cfg.Database
}

// AdminDSNFlag defines -db, the admin DSN a command creates its fresh
// footprint_bench_<random> database from; by default $DATABASE_URL, else
// $TEST_DATABASE_URL.
func AdminDSNFlag(p *string) {
	flag.StringVar(p, "db", firstNonEmpty(os.Getenv("DATABASE_URL"), os.Getenv("TEST_DATABASE_URL")),
		"admin Postgres DSN; a fresh footprint_bench_<random> database is created from it and dropped at exit")
}

// RequireAdminDSN exits with status 2 and a hint when -db was not given.
func RequireAdminDSN(command, dsn string) {
	if dsn == "" {
		Usage(command, "-db is required (e.g. -db \"$(scripts/test-postgres.sh start)\")")
	}
}

// CitusDSNFlag defines -citus, the admin DSN of a Citus coordinator whose cluster a command
// measures against the single Postgres of -db, in the same run (docs/scale-out.md).
func CitusDSNFlag(p *string) {
	flag.StringVar(p, "citus", "",
		"admin DSN of a Citus coordinator (e.g. \"$(scripts/test-citus.sh start)\"): measure the service on it against the one on -db, "+
			"in the same run; a fresh footprint_bench_<random> database is created on every node, distributed by the migrations, and dropped at exit")
}

// CreateCitusDatabase is CreateDatabase on the Citus cluster whose coordinator adminDSN names:
// the database is created on every node with the citus and vector extensions and the nodes
// registered (pgcluster), so that the store's migrations distribute the tenant tables.
func CreateCitusDatabase(ctx context.Context, adminDSN, prefix, command string) (string, func(), error) {
	cluster, err := pgcluster.Open(ctx, adminDSN)
	if err != nil {
		return "", nil, fmt.Errorf("connect (Citus admin DSN): %w", err)
	}
	if !cluster.Citus() {
		return "", nil, errors.New("-citus: the database it names has no citus extension (is it a Citus coordinator?)")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := prefix + hex.EncodeToString(rnd[:])
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.Drop(dctx, name); err != nil {
			fmt.Fprintf(os.Stderr, "%s: drop database %s on the Citus cluster: %v\n", command, name, err)
		}
	}
	if err := cluster.Create(ctx, name); err != nil {
		drop()
		return "", nil, err
	}
	dsn, err := cluster.DSN(name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return dsn, drop, nil
}
