package a2atasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/sqlstore"
)

// runKeyConformance runs the conformance suite against the key table that sits beside
// the SQL task store: the keys' sweep then consults the task table, and a key must
// survive the deletion of a task this store created.
func runKeyConformance(t *testing.T, open func(testing.TB) testDB) {
	conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
		d := open(t)
		clock := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		keys, tasks := d.stores(t, d.open(), clock.Now)
		second := d.open()
		return conformance.Harness{
			Index:   keys,
			Advance: clock.Advance,
			TTL:     idempotency.DefaultKeyMaxAge, // sqlstore's default TTL
			OpenHandle: func() (idempotency.KeyIndex, error) {
				return sqlstore.New(second, sqlstore.Options{Table: d.prefix + "keys", TaskTable: tasks.Table(), Now: clock.Now})
			},
			CreateTask: func(ctx context.Context) (string, error) {
				id := a2a.NewTaskID()
				_, err := tasks.Create(ctx, &a2a.Task{ID: id, ContextID: a2a.NewContextID(),
					Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
				return string(id), err
			},
			DeleteTask: func(ctx context.Context, id string) error {
				db := d.open()
				_, err := db.ExecContext(ctx, db.Rebind(`DELETE FROM `+tasks.Table()+` WHERE id = ?`), id)
				return err
			},
		}
	})
}

func TestPostgresKeyConformance(t *testing.T) { runKeyConformance(t, openPostgres) }
