package sqlstore_test

import (
	"testing"

	_ "github.com/lib/pq"
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
