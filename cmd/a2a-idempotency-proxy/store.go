package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"           // PostgreSQL, for -store postgres://...
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)

	"github.com/a2akit/idempotency/sqlstore"
)

// sqliteParams are the connection parameters the sqlstore documentation asks for.
const sqliteParams = "_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"

// keyStore is the open key store.
type keyStore struct {
	db    *sqlx.DB
	index *sqlstore.Store
}

func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// openStore opens the key store that store names (a postgres:// DSN, or else a SQLite
// file, created if missing) and creates its key table if needed.
func openStore(ctx context.Context, store, table string) (*keyStore, error) {
	driver, dsn := "sqlite3", "file:"+store+"?"+sqliteParams
	if isPostgres(store) {
		driver, dsn = "postgres", store
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open the key store (%s): %w", storeName(store), err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to the key store (%s): %w", storeName(store), err)
	}
	index, err := sqlstore.New(db, sqlstore.Options{Table: table})
	if err == nil {
		err = index.Migrate(ctx)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create the key table in %s: %w", storeName(store), err)
	}
	return &keyStore{db: db, index: index}, nil
}

// ready reports whether the key store answers.
func (s *keyStore) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return s.db.PingContext(ctx)
}

func (s *keyStore) close() error { return s.db.Close() }

// storeName describes store for a log line, hiding a DSN's password.
func storeName(store string) string {
	if !isPostgres(store) {
		return "SQLite file " + store
	}
	u, err := url.Parse(store)
	if err != nil {
		return "PostgreSQL (unparsable DSN)"
	}
	return "PostgreSQL " + u.Redacted()
}
