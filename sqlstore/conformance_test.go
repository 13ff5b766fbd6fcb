package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/sqlstore"
)

// conformanceTTL is the TTL of the harness's stores; the suite steps over it on the
// controllable clock.
const conformanceTTL = 24 * time.Hour

// runConformance runs the conformance suite twice against fresh tables of the
// databases open returns: with the full harness (the Go clock moved by the suite, a
// second pool on the same database, and a tasks table beside the keys), and on the
// database's own clock, as servers run.
func runConformance(t *testing.T, open func(testing.TB) *database) {
	t.Run("Harness", func(t *testing.T) {
		conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
			db := open(t)
			clock := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			opts := sqlstore.Options{Table: db.prefix + "keys", Now: clock.Now, TTL: conformanceTTL}
			ix, _ := db.stores(t, opts)
			tasks := db.prefix + "tasks"
			if _, err := db.a.Exec(`CREATE TABLE ` + tasks + ` (id TEXT PRIMARY KEY, state TEXT NOT NULL)`); err != nil {
				t.Fatalf("create the tasks table: %v", err)
			}
			return conformance.Harness{
				Index:   ix,
				Advance: clock.Advance,
				TTL:     conformanceTTL,
				OpenHandle: func() (idempotency.KeyIndex, error) {
					return sqlstore.New(db.open(), opts)
				},
				CreateTask: func(ctx context.Context) (string, error) {
					id := testkit.RandomName("task-")
					_, err := db.b.ExecContext(ctx, db.b.Rebind(`INSERT INTO `+tasks+` (id, state) VALUES (?, 'TASK_STATE_COMPLETED')`), id)
					return id, err
				},
				DeleteTask: func(ctx context.Context, id string) error {
					_, err := db.b.ExecContext(ctx, db.b.Rebind(`DELETE FROM `+tasks+` WHERE id = ?`), id)
					return err
				},
			}
		})
	})
	t.Run("DatabaseClock", func(t *testing.T) {
		conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
			ix, _ := open(t).stores(t, sqlstore.Options{})
			return ix
		})
	})
}

func TestPostgresConformance(t *testing.T) {
	runConformance(t, func(t testing.TB) *database { return openPostgres(t, "postgres") })
}
