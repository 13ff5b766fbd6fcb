package main

import (
	"context"
	"fmt"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL, for -store postgres://... (-postgres-driver pgx)
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"           // PostgreSQL, -postgres-driver pq
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// keyStore is the open key store.
type keyStore struct {
	index idempotency.KeyIndex
	// sweeper deletes old keys; nil when the store expires them itself.
	sweeper idempotency.Sweeper
	// name describes the store for logs, without credentials.
	name  string
	close func() error
}

// storeOpener opens the key store that c.store names.
type storeOpener func(ctx context.Context, c *config) (*keyStore, error)

// storeOpeners open a key store by the scheme of -store (sqlstore.Scheme: "" is a
// file path). A kind of store is added here, in a file of its own (redis.go).
var storeOpeners = map[string]storeOpener{
	"": openSQL, "sqlite": openSQL, "file": openSQL, "postgres": openSQL, "postgresql": openSQL,
	"redis": openRedis, "rediss": openRedis,
}

// openStore opens the key store -store names, within 10 seconds.
func openStore(ctx context.Context, c *config) (*keyStore, error) {
	open, ok := storeOpeners[sqlstore.Scheme(c.store)]
	if !ok {
		return nil, fmt.Errorf("-store %s: not a store this proxy opens; want a SQLite file path, a postgres:// DSN or a redis:// URL",
			sqlstore.Describe(c.store))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return open(ctx, c)
}

// openSQLDB opens the SQL database of -store: sqlstore.Open, which takes lib/pq
// when it is registered, unless a postgres:// store is to use pgx. It keeps
// maxIdleConns idle connections: database/sql keeps 2 by default, and with more
// sends in flight every store call past the second opened a connection and closed
// it after, paying a connect (for SQLite, its pragmas and a new statement cache).
func openSQLDB(ctx context.Context, c *config) (*sqlx.DB, error) {
	var db *sqlx.DB
	if s := sqlstore.Scheme(c.store); c.pgDriver != "pgx" || s != "postgres" && s != "postgresql" {
		var err error
		if db, err = sqlstore.Open(ctx, c.store); err != nil {
			return nil, err
		}
	} else {
		var err error
		if db, err = sqlx.Open("pgx", c.store); err != nil {
			return nil, fmt.Errorf("open %s: %w", sqlstore.Describe(c.store), err)
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("connect to %s: %w", sqlstore.Describe(c.store), err)
		}
	}
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// maxIdleConns is how many idle connections the sidecar keeps to its SQL store:
// enough for the sends a busy sidecar has in flight at once.
const maxIdleConns = 32

// openSQL opens a SQLite file (created if missing) or a PostgreSQL database, and
// creates the key table if needed.
func openSQL(ctx context.Context, c *config) (*keyStore, error) {
	db, err := openSQLDB(ctx, c)
	if err != nil {
		return nil, err
	}
	index, err := sqlstore.New(db, sqlstore.Options{Table: c.table})
	if err == nil {
		err = index.Migrate(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create the key table in %s: %w", sqlstore.Describe(c.store), err)
	}
	return &keyStore{index: index, sweeper: index, name: sqlstore.Describe(c.store), close: db.Close}, nil
}
