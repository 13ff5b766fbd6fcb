//go:build cgo

package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// TestPlainSQLDB: a Store works on a plain *sql.DB, with the dialect told from its
// driver.
func TestPlainSQLDB(t *testing.T) {
	db, err := sql.Open("sqlite3", sqliteDSN(filepath.Join(t.TempDir(), "keys.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqlstore.New(db, sqlstore.Options{})
	if err != nil {
		t.Fatalf("New(*sql.DB): %v", err)
	}
	if s.Dialect() != sqlstore.SQLite {
		t.Errorf("dialect %v, want sqlite", s.Dialect())
	}
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, "", key(1), "m", time.Minute)
	if err != nil || c.Status != idempotency.Claimed {
		t.Fatalf("Claim: %v, %v", c.Status, err)
	}
	if err := s.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	if rec, found, err := s.Lookup(ctx, "", key(1)); err != nil || !found || rec.TaskID != "t" {
		t.Fatalf("Lookup: %+v %v %v", rec, found, err)
	}
}

// TestDialectOfPlainSQLDB: the dialect of a *sql.DB comes from its driver's package.
// internal/e2e/pgxdriver checks the pgx driver, whose module users of sqlstore should
// not inherit.
func TestDialectOfPlainSQLDB(t *testing.T) {
	for driver, want := range map[string]sqlstore.Dialect{
		"sqlite3":  sqlstore.SQLite,
		"postgres": sqlstore.PostgreSQL,
	} {
		db, err := sql.Open(driver, "postgres://nobody@127.0.0.1:1/none") // sql.Open does not connect
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := sqlstore.DialectOf(db); !ok || got != want {
			t.Errorf("DialectOf(sql.Open(%q)) = %v, %v; want %v", driver, got, ok, want)
		}
		db.Close()
	}
	var nilDB *sql.DB
	if _, err := sqlstore.New(nilDB, sqlstore.Options{}); err == nil {
		t.Error("New((*sql.DB)(nil)) succeeded")
	}
}
