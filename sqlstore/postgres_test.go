package sqlstore_test

import (
	"testing"

	_ "github.com/lib/pq"
)

func TestPostgres(t *testing.T) {
	testStore(t, func(t testing.TB) *database { return openPostgres(t, "postgres") })
}
