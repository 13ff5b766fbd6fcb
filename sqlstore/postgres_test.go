package sqlstore_test

import (
	"context"
	"testing"

	_ "github.com/lib/pq"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

func TestPostgres(t *testing.T) {
	testStore(t, func(t testing.TB) *database { return openPostgres(t, "postgres") })
}

func TestPostgresBlockedDeadline(t *testing.T) {
	db := openPostgres(t, "postgres")
	testBlockedDeadline(t, db, func(t *testing.T, table string) func() {
		tx, err := db.a.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`SELECT 1 FROM ` + table + ` FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback() }
	})
}

// TestPostgresTableNames: a reserved word and a mixed-case name work as table names
// (they are quoted, so the case is kept).
func TestPostgresTableNames(t *testing.T) {
	db := openPostgres(t, "postgres")
	for _, name := range []string{"order", "Keys"} {
		a, b := db.stores(t, sqlstore.Options{Table: db.prefix + name})
		c := mustClaim(t, a, "", key(1), "m", idempotency.Claimed)
		if err := b.Bind(context.Background(), "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Errorf("table %q: Bind: %v", name, err)
		}
		if err := b.Migrate(context.Background()); err != nil {
			t.Errorf("table %q: Migrate again: %v", name, err)
		}
	}
}
