package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/sqlstore"
)

// postgresDSNVar names the environment variable that points the PostgreSQL tests at a
// database, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const postgresDSNVar = "IDEMPOTENCY_POSTGRES_DSN"

// newClock returns a clock for Options.Now that moves only when the test advances it.
func newClock() *conformance.Clock {
	return conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
}

// database is one database under test, reached through two independent pools, as two
// replicas of a server would reach it.
type database struct {
	dialect sqlstore.Dialect
	a, b    *sqlx.DB
	// prefix qualifies the names of the tables a test creates ("" or "schema.").
	prefix string
	// open opens another pool on the database, closed when the test ends.
	open func() *sqlx.DB
}

// stores returns two migrated stores on one fresh table, one per pool.
func (d *database) stores(t testing.TB, opts sqlstore.Options) (*sqlstore.Store, *sqlstore.Store) {
	t.Helper()
	if opts.Table == "" {
		opts.Table = d.prefix + "keys_" + randomName()
	}
	a, err := sqlstore.New(d.a, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b, err := sqlstore.New(d.b, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := a.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return a, b
}

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// postgresDSN returns the DSN of the test database, skipping the test when none is
// configured.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(postgresDSNVar)
	if dsn == "" {
		t.Skipf("PostgreSQL tests need a database: set %s, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable", postgresDSNVar)
	}
	return dsn
}

// openPostgres opens two pools with driver on the configured database, in a fresh
// schema that is dropped when the test ends. It fails the test when the database is
// configured but unreachable.
func openPostgres(t testing.TB, driver string) *database {
	t.Helper()
	dsn := postgresDSN(t)
	open := func() *sqlx.DB {
		db, err := sqlx.Open(driver, dsn)
		if err != nil {
			t.Fatalf("open %s %s: %v", driver, postgresDSNVar, err)
		}
		t.Cleanup(func() { db.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			t.Fatalf("%s is set but the database is unreachable: %v", postgresDSNVar, err)
		}
		return db
	}
	a, b := open(), open()
	schema := "sqlstore_test_" + randomName()
	if _, err := a.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := a.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return &database{dialect: sqlstore.PostgreSQL, a: a, b: b, prefix: schema + ".", open: open}
}
