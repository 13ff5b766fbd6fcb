package testdb

import (
	"context"
	"github.com/a2akit/idempotency/internal/testkit"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// OpenTaskStores opens the database spec names ([OpenDB]) with keys and tasks side
// by side (sqlstore beside sqlstore/a2atasks, in their default tables), migrated.
// keyTTL and runLease are the stores' options (zero: their defaults). With sole, it
// calls a2atasks' Restarted, as the only server on the database does before it
// serves, and logs what that ended.
func OpenTaskStores(ctx context.Context, spec string, keyTTL, runLease time.Duration, sole bool, log *slog.Logger) (*sqlx.DB, *sqlstore.Store, *a2atasks.Store, error) {
	db, err := OpenDB(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err := sqlstore.New(db, sqlstore.Options{TaskTable: a2atasks.DefaultTable, TTL: keyTTL})
	if err != nil {
		return nil, nil, nil, err
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{Keys: keys, RunLease: runLease})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := tasks.Migrate(ctx); err != nil {
		return nil, nil, nil, err
	}
	if sole {
		ended, leases, err := tasks.Restarted(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		log.Warn("restarted as the sole instance", "tasks_ended", ended, "leases_ended", leases)
	}
	return db, keys, tasks, nil
}

// PostgresSchema returns the DSN of IDEMPOTENCY_POSTGRES_DSN ([PostgresDSN]: the test
// is skipped when it is unset) with a fresh schema, named with prefix, as its
// search_path; the schema is dropped when the test ends.
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := testkit.PostgresDSN(t)
	db, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema := testkit.RandomName(prefix)
	if _, err := db.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", testkit.PostgresDSNVar, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec(`DROP SCHEMA "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
