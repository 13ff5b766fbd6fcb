//go:build cgo

package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"

	"github.com/a2akit/idempotency/sqlstore"
)

// sqliteDSN is the DSN the package documentation recommends.
func sqliteDSN(path string) string {
	return "file:" + path + "?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"
}

// openSQLite opens two handles on one fresh database file, as two processes would.
func openSQLite(t testing.TB) *database {
	t.Helper()
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "keys.db"))
	open := func() *sqlx.DB {
		db, err := sqlx.Open("sqlite3", dsn)
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Ping(); err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		return db
	}
	return &database{dialect: sqlstore.SQLite, a: open(), b: open(), open: open}
}
