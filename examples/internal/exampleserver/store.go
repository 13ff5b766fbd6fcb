package exampleserver

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

// DefaultStore is the -store default: a SQLite file in the working directory.
const DefaultStore = "idempotency.db"

// sqliteParams are the connection parameters the sqlstore documentation asks for:
// WAL, a short busy timeout that the store's own retries extend, immediate write
// transactions, and a statement cache.
const sqliteParams = "_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"

// IsPostgres reports whether store names a PostgreSQL database rather than a SQLite
// file.
func IsPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// OpenIndex opens the key index that store names: a PostgreSQL database for a
// postgres:// (or postgresql://) DSN, otherwise a SQLite file at that path, created if
// it does not exist. It creates the key table (named table, or sqlstore.DefaultTable
// when empty) if needed. The returned close function closes the database; call it
// after the server has stopped.
func OpenIndex(ctx context.Context, store, table string) (*sqlstore.Store, func() error, error) {
	driver, dsn := "sqlite3", "file:"+store+"?"+sqliteParams
	if IsPostgres(store) {
		driver, dsn = "postgres", store
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s key store: %w", driver, err)
	}
	fail := func(err error) (*sqlstore.Store, func() error, error) {
		db.Close()
		return nil, nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		return fail(fmt.Errorf("connect to the %s key store: %w", driver, err))
	}
	index, err := sqlstore.New(db, sqlstore.Options{Table: table})
	if err != nil {
		return fail(err)
	}
	if err := index.Migrate(pingCtx); err != nil {
		return fail(fmt.Errorf("create the key table: %w", err))
	}
	return index, db.Close, nil
}

// StoreName describes store for a log line or a banner, hiding the password a
// PostgreSQL DSN may carry.
func StoreName(store string) string {
	if !IsPostgres(store) {
		return "SQLite file " + store
	}
	u, err := url.Parse(store)
	if err != nil {
		return "PostgreSQL"
	}
	return "PostgreSQL " + u.Redacted()
}
