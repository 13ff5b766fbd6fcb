//go:build cgo

package a2atasks_test

import (
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"
)

// openSQLite returns a fresh SQLite file, opened with the DSN sqlstore's documentation
// recommends.
func openSQLite(t testing.TB) testDB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "a2a.db") + "?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"
	return testDB{open: func() *sqlx.DB {
		db, err := sqlx.Open("sqlite3", dsn)
		if err != nil {
			t.Fatalf("open sqlite: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}}
}

func TestSQLiteBehaviour(t *testing.T) {
	testBehaviour(t, behaviourStore(openSQLite), true)
}

func TestSQLiteServer(t *testing.T) { testServer(t, openSQLite) }

func TestSQLiteSweep(t *testing.T) { testSweep(t, openSQLite) }
