// Package pgcluster creates, clones and drops databases on every node of the database
// cluster an admin DSN points at: one plain Postgres server, or a Citus cluster (the
// coordinator the DSN names and the workers registered in its pg_dist_node). Test harnesses
// (pgtest) and benchmarks use it; the service never does.
//
// Citus keeps its metadata (nodes, shards) per database and does not propagate CREATE
// DATABASE ... TEMPLATE, so a Citus database is made on every node by hand (Create), and a
// filled one is copied, shards included, by cloning it under the same name on every node
// (Clone): Citus reaches a database's shards on the workers by the database's own name, and a
// clone's metadata is the template's, identical on every node. Every node runs a maintenance
// daemon per Citus database, and the other nodes' daemons connect to it (two-phase commit
// recovery); a database being cloned or dropped is therefore first shut to new connections on
// every node, then its sessions are ended (Seal).
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Cluster is the set of nodes an admin DSN belongs to.
type Cluster struct {
	nodes []string // admin DSNs, the one given first
	citus bool
}

// Open finds the nodes of the cluster admin points at: admin alone, unless its database has
// the citus extension, when every node registered there (coordinator first). admin must be a
// postgres:// URL when it is a Citus coordinator (the workers' DSNs are made from it).
func Open(ctx context.Context, admin string) (*Cluster, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	c := &Cluster{nodes: []string{admin}}
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&c.citus); err != nil {
		return nil, err
	}
	if !c.citus {
		return c, nil
	}
	rows, err := conn.Query(ctx, `SELECT nodename, nodeport FROM pg_dist_node
		WHERE groupid <> 0 AND noderole = 'primary' ORDER BY groupid`)
	if err != nil {
		return nil, err
	}
	hosts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var host string
		var port int
		err := r.Scan(&host, &port)
		return fmt.Sprintf("%s:%d", host, port), err
	})
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		dsn, err := withHost(admin, h)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, dsn)
	}
	return c, nil
}

// Citus reports whether the cluster is a Citus cluster.
func (c *Cluster) Citus() bool { return c.citus }

// Nodes returns every node's admin DSN, the coordinator's (the one given to Open) first.
func (c *Cluster) Nodes() []string { return append([]string(nil), c.nodes...) }

// DSN returns the DSN of database name through the node Open was given.
func (c *Cluster) DSN(name string) (string, error) { return WithDatabase(c.nodes[0], name) }

// NodeDSN returns the DSN of database name on node i (0: the coordinator).
func (c *Cluster) NodeDSN(i int, name string) (string, error) { return WithDatabase(c.nodes[i], name) }

// Create creates database name on every node. On Citus it then creates the citus and vector
// extensions in it on every node and registers the coordinator and the workers in the
// coordinator's copy, as Open found them, so that tables created there can be distributed.
func (c *Cluster) Create(ctx context.Context, name string) error {
	if err := c.each(ctx, func(ctx context.Context, node string) error {
		return exec(ctx, node, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	}); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if !c.citus {
		return nil
	}
	if err := c.each(ctx, func(ctx context.Context, node string) error {
		dsn, err := WithDatabase(node, name)
		if err != nil {
			return err
		}
		return exec(ctx, dsn, "CREATE EXTENSION citus; CREATE EXTENSION vector")
	}); err != nil {
		return fmt.Errorf("extensions in %s: %w", name, err)
	}
	coord, err := c.DSN(name)
	if err != nil {
		return err
	}
	for i, node := range c.nodes {
		u, err := url.Parse(node)
		if err != nil {
			return err
		}
		fn := "citus_add_node"
		if i == 0 {
			fn = "citus_set_coordinator_host"
		}
		if err := exec(ctx, coord, fmt.Sprintf("SELECT %s(%s, %s)", fn, literal(u.Hostname()), port(u))); err != nil {
			return fmt.Errorf("%s in %s: %w", fn, name, err)
		}
	}
	return nil
}

// Clone creates database name as a copy of template on every node, concurrently. template must
// have no sessions on any node: Seal it once it is filled. Sessions found in it anyway (someone
// let it accept connections for a while, and maintenance daemons came in) are ended.
func (c *Cluster) Clone(ctx context.Context, name, template string) error {
	err := c.each(ctx, func(ctx context.Context, node string) error {
		return retryBusy(ctx, func() error {
			err := exec(ctx, node, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
			if isBusy(err) {
				_ = exec(ctx, node, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE datname = `+literal(template)+` AND NOT (SELECT datallowconn FROM pg_database WHERE datname = `+literal(template)+`)`)
			}
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("clone %s as %s: %w", template, name, err)
	}
	return nil
}

// Seal makes database name refuse new connections on every node, then ends the sessions it
// has (in that order: another node's maintenance daemon would reconnect at once). Nothing is
// done on a node where it does not exist.
func (c *Cluster) Seal(ctx context.Context, name string) error {
	if err := c.each(ctx, func(ctx context.Context, node string) error {
		return exec(ctx, node, `DO $$ BEGIN
			IF EXISTS (SELECT 1 FROM pg_database WHERE datname = `+literal(name)+` AND datallowconn) THEN
				EXECUTE 'ALTER DATABASE `+strings.ReplaceAll(pgx.Identifier{name}.Sanitize(), "'", "''")+` WITH ALLOW_CONNECTIONS false';
			END IF; END $$`)
	}); err != nil {
		return fmt.Errorf("seal %s: %w", name, err)
	}
	if err := c.each(ctx, func(ctx context.Context, node string) error {
		return exec(ctx, node, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = `+literal(name))
	}); err != nil {
		return fmt.Errorf("end the sessions of %s: %w", name, err)
	}
	return nil
}

// Rename renames database from to to on every node (from must be sealed).
func (c *Cluster) Rename(ctx context.Context, from, to string) error {
	return c.each(ctx, func(ctx context.Context, node string) error {
		return retryBusy(ctx, func() error {
			return exec(ctx, node, "ALTER DATABASE "+pgx.Identifier{from}.Sanitize()+" RENAME TO "+pgx.Identifier{to}.Sanitize())
		})
	})
}

// Drop seals database name and drops it on every node, if it exists. Logical replication
// subscriptions a shard move or split left in it (one that failed half-way) are dropped first:
// Postgres refuses to drop a database that has one.
func (c *Cluster) Drop(ctx context.Context, name string) error {
	if err := c.each(ctx, func(ctx context.Context, node string) error {
		return dropSubscriptions(ctx, node, name)
	}); err != nil {
		return fmt.Errorf("drop the subscriptions of %s: %w", name, err)
	}
	if err := c.Seal(ctx, name); err != nil {
		return err
	}
	return c.each(ctx, func(ctx context.Context, node string) error {
		return retryBusy(ctx, func() error {
			return exec(ctx, node, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		})
	})
}

// dropSubscriptions drops the subscriptions of database name on the node admin names, without
// their replication slots (the database's own go with it; another node's are dropped by Citus's
// cleanup, or by hand).
func dropSubscriptions(ctx context.Context, admin, name string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT s.subname FROM pg_subscription s JOIN pg_database d ON d.oid = s.subdbid
		WHERE d.datname = $1`, name)
	if err != nil {
		return err
	}
	subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(subs) == 0 {
		return err
	}
	if err := exec(ctx, admin, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH ALLOW_CONNECTIONS true"); err != nil {
		return err
	}
	dsn, err := WithDatabase(admin, name)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		id := pgx.Identifier{sub}.Sanitize()
		if err := exec(ctx, dsn, "ALTER SUBSCRIPTION "+id+" DISABLE; ALTER SUBSCRIPTION "+id+" SET (slot_name = NONE); DROP SUBSCRIPTION "+id); err != nil {
			return err
		}
	}
	return nil
}

// each runs fn on every node's admin DSN at once and returns the first error.
func (c *Cluster) each(ctx context.Context, fn func(ctx context.Context, node string) error) error {
	if len(c.nodes) == 1 {
		return fn(ctx, c.nodes[0])
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, node := range c.nodes {
		wg.Go(func() { errs[i] = fn(ctx, node) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// retryBusy runs fn again while it fails because a session is still in the database concerned
// (SQLSTATE 55006: a maintenance daemon that has not exited yet, which DROP ... WITH (FORCE)
// cannot end), for up to 15 seconds.
func retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := fn()
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// isBusy reports SQLSTATE 55006, object in use: a database with sessions in it.
func isBusy(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55006"
}

// exec runs sql on its own connection: CREATE and DROP DATABASE cannot share a transaction,
// and nothing is kept between calls.
func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// WithDatabase returns dsn pointing at database name. It accepts URLs (postgres://...) and
// keyword/value strings (host=... dbname=...).
func WithDatabase(dsn, name string) (string, error) {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("parse DSN: invalid URL")
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In keyword/value form a later keyword overrides an earlier one.
	return dsn + " dbname=" + name, nil
}

// withHost returns the URL dsn with its host:port replaced.
func withHost(dsn, hostport string) (string, error) {
	if !isURL(dsn) {
		return "", errors.New("a Citus coordinator's admin DSN must be a postgres:// URL")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("parse DSN: invalid URL")
	}
	u.Host = hostport
	return u.String(), nil
}

func isURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "5432"
}

// literal is s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
