//go:build sqlstore_pgx

// This file needs github.com/jackc/puddle/v2 (a dependency of pgx's stdlib package)
// required in go.mod; until it is, it builds only with -tags sqlstore_pgx after
// adding it.

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
