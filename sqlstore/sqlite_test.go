//go:build cgo

package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/a2akit/idempotency/sqlstore"
)

func TestSQLite(t *testing.T) { testStore(t, openSQLite) }

func TestSQLiteStatementCount(t *testing.T) {
	dsn := sqliteDSN(filepath.Join(t.TempDir(), "keys.db"))
	testStatementCount(t, sqlstore.SQLite, &countingConnector{driver: &sqlite3.SQLiteDriver{}, dsn: dsn}, "keys")
}
