// Package pgxdriver runs sqlstore on PostgreSQL through the pgx stdlib driver ("pgx"),
// whose value types and cached prepared statements differ from lib/pq's. It lives in
// the e2e module so that users of sqlstore do not inherit pgx.
package pgxdriver

import (
	"context"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/sqlstore"
)

const ttl = 24 * time.Hour

// TestConformance runs the conformance suite on sqlstore over pgx, in a fresh schema
// dropped when the test ends, with a controllable clock and a second pool.
func TestConformance(t *testing.T) {
	conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
		dsn := testkit.PostgresDSN(t)
		a, b := testdb.OpenPool(t, "pgx", dsn), testdb.OpenPool(t, "pgx", dsn)
		schema := testkit.RandomName("pgx_test_")
		if _, err := a.Exec(`CREATE SCHEMA ` + schema); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() {
			if _, err := b.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
				t.Errorf("drop schema: %v", err)
			}
		})
		clock := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		opts := sqlstore.Options{Table: schema + ".keys", Now: clock.Now, TTL: ttl}
		ix, err := sqlstore.New(a, opts)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if err := ix.Migrate(context.Background()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		tasks := schema + ".tasks"
		if _, err := a.Exec(`CREATE TABLE ` + tasks + ` (id TEXT PRIMARY KEY, state TEXT NOT NULL)`); err != nil {
			t.Fatalf("create the tasks table: %v", err)
		}
		return conformance.Harness{
			Index:      ix,
			Advance:    clock.Advance,
			TTL:        ttl,
			OpenHandle: func() (idempotency.KeyIndex, error) { return sqlstore.New(b, opts) },
			CreateTask: func(ctx context.Context) (string, error) {
				id := testkit.RandomName("task-")
				_, err := b.ExecContext(ctx, `INSERT INTO `+tasks+` (id, state) VALUES ($1, 'TASK_STATE_COMPLETED')`, id)
				return id, err
			},
			DeleteTask: func(ctx context.Context, id string) error {
				_, err := b.ExecContext(ctx, `DELETE FROM `+tasks+` WHERE id = $1`, id)
				return err
			},
		}
	})
}
