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
