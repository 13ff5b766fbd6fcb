//go:build cgo

package sqlstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

func TestSQLite(t *testing.T) { testStore(t, openSQLite) }

func TestSQLiteStatementCount(t *testing.T) {
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "keys.db"))
	testStatementCount(t, sqlstore.SQLite, &sqlite3.SQLiteDriver{}, dsn, "keys")
}

func BenchmarkSQLiteClaims(b *testing.B) { benchmarkClaims(b, openSQLite) }

func TestSQLiteBlockedDeadline(t *testing.T) {
	for _, far := range []bool{false, true} {
		t.Run(map[bool]string{false: "near", true: "far"}[far], func(t *testing.T) {
			db := openSQLite(t)
			testBlockedDeadline(t, db, far, func(t *testing.T, table string) func() {
				tx, err := db.a.Beginx() // BEGIN IMMEDIATE (_txlock=immediate): the write lock
				if err != nil {
					t.Fatal(err)
				}
				return func() { tx.Rollback() }
			})
		})
	}
}

// TestSQLiteBusyRetries runs the contention test with SQLite's own busy wait off: every
// SQLITE_BUSY reaches the store, which must retry it.
func TestSQLiteBusyRetries(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "keys.db") + "?_journal_mode=WAL&_busy_timeout=0&_txlock=immediate"
	open := func() *sqlx.DB {
		db, err := sqlx.Open("sqlite3", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	testTwoPoolsOneWinner(t, &database{dialect: sqlstore.SQLite, a: open(), b: open()})
}

func TestSQLiteConformance(t *testing.T) { runConformance(t, openSQLite) }

// TestSQLiteTableNames: a schema-qualified name and a reserved word work as table
// names.
func TestSQLiteTableNames(t *testing.T) {
	db := openSQLite(t)
	for _, name := range []string{"main.keys", "order", "Select"} {
		a, b := db.stores(t, sqlstore.Options{Table: name})
		c := mustClaim(t, a, "", key(1), "m", idempotency.Claimed)
		if err := b.Bind(context.Background(), "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Errorf("table %q: Bind: %v", name, err)
		}
		if err := b.Migrate(context.Background()); err != nil {
			t.Errorf("table %q: Migrate again: %v", name, err)
		}
	}
}

func TestSQLiteEndLeases(t *testing.T) { testEndLeases(t, openSQLite(t)) }
