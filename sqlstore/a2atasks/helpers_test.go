package a2atasks_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// testDB is one fresh database under test: open opens another pool on it (closed when
// the test ends), and prefix qualifies table names ("" or "schema.").
type testDB struct {
	open   func() *sqlx.DB
	prefix string
}

// openPostgres returns a fresh schema on the database of IDEMPOTENCY_POSTGRES_DSN,
// dropped when the test ends; it skips the test when the variable is unset and fails
// it when the database cannot be reached.
func openPostgres(t testing.TB) testDB {
	t.Helper()
	return openPostgresWith(t, "postgres")
}

func openPostgresWith(t testing.TB, driver string) testDB {
	t.Helper()
	dsn := testkit.PostgresDSN(t)
	open := func() *sqlx.DB {
		db, err := sqlx.Open(driver, dsn)
		if err != nil {
			t.Fatalf("open postgres: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Ping(); err != nil {
			t.Fatalf("postgres at %s: %v", testkit.PostgresDSNVar, err)
		}
		return db
	}
	schema := testkit.RandomName("a2atasks_")
	admin := open()
	if _, err := admin.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA "` + schema + `" CASCADE`) })
	return testDB{open: open, prefix: schema + "."}
}

// stores returns a migrated key store and task store on db, the keys with TaskTable
// set so that one sweep covers both.
func (d testDB) stores(t testing.TB, db *sqlx.DB, now func() time.Time) (*sqlstore.Store, *a2atasks.Store) {
	t.Helper()
	keys, err := sqlstore.New(db, sqlstore.Options{Table: d.prefix + "keys", TaskTable: d.prefix + "tasks", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{Table: d.prefix + "tasks", Keys: keys, Authenticator: ownerOf, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := tasks.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return keys, tasks
}

// behaviourStore is a newStoreFunc on a fresh database from open.
func behaviourStore(open func(t testing.TB) testDB) newStoreFunc {
	return func(t *testing.T, now func() time.Time) taskstore.Store {
		d := open(t)
		_, tasks := d.stores(t, d.open(), now)
		return tasks
	}
}

func TestPostgresBehaviour(t *testing.T) {
	testBehaviour(t, behaviourStore(openPostgres), true)
}

func TestPostgresStatementsPerKeyedSend(t *testing.T) {
	d := openPostgres(t)
	testStatementsPerKeyedSend(t, &pq.Driver{}, os.Getenv(testkit.PostgresDSNVar), d.prefix)
}
