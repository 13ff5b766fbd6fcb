package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/sqlstore"
)

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
		opts.Table = d.prefix + testkit.RandomName("keys_")
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

// openPostgres opens two pools with driver on the configured database, in a fresh
// schema that is dropped when the test ends. It fails the test when the database is
// configured but unreachable.
func openPostgres(t testing.TB, driver string) *database {
	t.Helper()
	dsn := testkit.PostgresDSN(t)
	open := func() *sqlx.DB { return testdb.OpenPool(t, driver, dsn) }
	a, b := open(), open()
	schema := testkit.RandomName("sqlstore_test_")
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
