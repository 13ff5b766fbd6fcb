package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/sqlstore"
)

// benchmarkClaims measures claims of distinct keys at 1, 8 and 32 concurrent
// goroutines, against a baseline in the same run: a plain single-statement
// INSERT … ON CONFLICT DO NOTHING of the same columns into a table of the same shape.
// Both run on the same pool, in alternating rounds, b.N operations each. It reports
// claims/s, baseline inserts/s and their ratio (SPEC §5 asks for at least 0.7 on
// PostgreSQL); ns/op is the claim's.
func benchmarkClaims(b *testing.B, open func(testing.TB) *database) {
	for _, conc := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("goroutines=%d", conc), func(b *testing.B) {
			db := open(b)
			db.a.SetMaxOpenConns(conc)
			db.a.SetMaxIdleConns(conc)
			store, _ := db.stores(b, sqlstore.Options{})
			base, _ := db.stores(b, sqlstore.Options{})
			insert := baselineInsert(db.dialect, base.Table())
			ctx := context.Background()

			claim := testkit.FreshClaims(ctx, store, key)
			baseline := func(i int) error {
				_, err := db.a.ExecContext(ctx, insert, "bench", key(i), "m", int64(i+1), time.Minute.Microseconds())
				return err
			}
			testkit.WarmUp(b, conc, baseline, claim)

			claimTime, baseTime := testkit.Alternate(b, conc, conc, claim, baseline)
			testkit.ReportClaims(b, claimTime, baseTime, "inserts")
		})
	}
}

// baselineInsert is the baseline statement: the claim's columns and values, with
// nothing to decide on conflict.
func baselineInsert(d sqlstore.Dialect, table string) string {
	switch d {
	case sqlstore.PostgreSQL:
		return `INSERT INTO ` + table + ` (scope, "key", message_id, token, claimed_at, lease_expires_at)
VALUES ($1, $2, $3, $4, now(), now() + $5::bigint * interval '1 microsecond') ON CONFLICT DO NOTHING`
	default:
		const now = `(CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000)`
		return `INSERT INTO ` + table + ` (scope, "key", message_id, token, claimed_at, lease_expires_at)
VALUES (?1, ?2, ?3, ?4, ` + now + `, ` + now + ` + ?5) ON CONFLICT DO NOTHING`
	}
}

func BenchmarkPostgresClaims(b *testing.B) {
	benchmarkClaims(b, func(tb testing.TB) *database { return openPostgres(tb, "postgres") })
}
