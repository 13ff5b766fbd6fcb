package sqlstore_test

import (
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// TestPostgresPgx runs the store tests through the pgx stdlib driver ("pgx"), whose
// value types (and cached prepared statements) differ from lib/pq's.
func TestPostgresPgx(t *testing.T) {
	testStore(t, func(t testing.TB) *database { return openPostgres(t, "pgx") })
}

func BenchmarkPgxClaims(b *testing.B) {
	benchmarkClaims(b, func(tb testing.TB) *database { return openPostgres(tb, "pgx") })
}
