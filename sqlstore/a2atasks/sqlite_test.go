//go:build cgo

package a2atasks_test

import (
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"
)

// sqliteDSN is the DSN sqlstore's documentation recommends.
func sqliteDSN(path string) string {
	return "file:" + path + "?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"
}

// openSQLite returns a fresh SQLite file, opened with the DSN sqlstore's documentation
// recommends.
func openSQLite(t testing.TB) testDB {
	t.Helper()
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "a2a.db"))
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

func init() { openSQLiteBench = openSQLite }

func TestSQLiteStatementsPerKeyedSend(t *testing.T) {
	testStatementsPerKeyedSend(t, &sqlite3.SQLiteDriver{}, sqliteDSN(filepath.Join(t.TempDir(), "a2a.db")), "")
}

func TestSQLiteReplicaUpdates(t *testing.T) { testReplicaUpdates(t, openSQLite) }

func TestSQLiteKeyConformance(t *testing.T) { runKeyConformance(t, openSQLite) }

func TestSQLiteCluster(t *testing.T) { testCluster(t, openSQLite) }

func TestSQLiteCreateBindsInOneTransaction(t *testing.T) {
	testCreateBindsInOneTransaction(t, openSQLite, func(d testDB) []string {
		return []string{`CREATE TRIGGER fail_bind BEFORE UPDATE ON "keys" BEGIN SELECT RAISE(ABORT, 'injected bind failure'); END`}
	}, func(d testDB) []string {
		return []string{`DROP TRIGGER fail_bind`}
	})
}

func TestSQLiteStoppedRunsEnd(t *testing.T) { testStoppedRunsEnd(t, openSQLite) }
func TestSQLiteLiveRunsKept(t *testing.T)   { testLiveRunsKept(t, openSQLite) }
func TestSQLiteAgentFailingBeforeFirstEvent(t *testing.T) {
	testAgentFailingBeforeFirstEvent(t, openSQLite)
}
