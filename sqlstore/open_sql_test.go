//go:build cgo

package sqlstore_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/sqlstore"
)

// Open gives a handle New and Migrate take, on SQLite (a file created on the spot,
// in WAL mode as the package asks) and on PostgreSQL when IDEMPOTENCY_POSTGRES_DSN
// is set; a database that does not answer is an error that hides the password.
func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.db")
	urls := []string{"sqlite:" + path}
	if dsn := os.Getenv(testkit.PostgresDSNVar); dsn != "" {
		urls = append(urls, dsn)
	} else {
		t.Log("PostgreSQL part skipped: set " + testkit.PostgresDSNVar)
	}
	for _, u := range urls {
		db, err := sqlstore.Open(t.Context(), u)
		if err != nil {
			t.Fatalf("Open(%s): %v", sqlstore.Describe(u), err)
		}
		t.Cleanup(func() { db.Close() })
		table := testkit.RandomName("open_test_")
		t.Cleanup(func() { db.Exec("DROP TABLE " + table) })
		store, err := sqlstore.New(db, sqlstore.Options{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := idempotency.CheckIndex(t.Context(), store); err != nil {
			t.Errorf("CheckIndex on %s: %v", sqlstore.Describe(u), err)
		}
		checkKeepsIdleConns(t, db, sqlstore.Describe(u))
	}
	var mode string
	db, err := sqlstore.Open(t.Context(), path) // the same file, as a plain path
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Get(&mode, "PRAGMA journal_mode"); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q, %v; want wal", mode, err)
	}

	_, err = sqlstore.Open(t.Context(), "postgres://app:secret@127.0.0.1:1/app?sslmode=disable&connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "postgres://app:xxxxx@127.0.0.1:1/app") {
		t.Errorf("Open of a database that does not answer: %v; want an error naming it without the password", err)
	}
}

// checkKeepsIdleConns holds sqlstore.IdleConns connections of db at once and gives
// them back: all stay open for the next store calls. With database/sql's 2, a busy
// server connected anew for most calls, and a lease extension that had to connect
// under load missed its deadline (see "Connections" in the package documentation).
func checkKeepsIdleConns(t *testing.T, db *sqlx.DB, name string) {
	t.Helper()
	conns := make([]*sql.Conn, sqlstore.IdleConns)
	for i := range conns {
		c, err := db.Conn(t.Context())
		if err != nil {
			t.Fatalf("%s: connection %d: %v", name, i, err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Close()
	}
	if st := db.Stats(); st.Idle != sqlstore.IdleConns || st.MaxIdleClosed != 0 {
		t.Errorf("%s: after %d connections were given back, %d are idle and %d were closed for the idle limit; want all idle",
			name, sqlstore.IdleConns, st.Idle, st.MaxIdleClosed)
	}
}
