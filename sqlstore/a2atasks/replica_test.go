package a2atasks_test

import (
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// testReplicaUpdates: updates from one version through two pools (two replicas) at
// once have exactly one winner; the others get ErrConcurrentModification, and every
// replica reads the winner's task.
func testReplicaUpdates(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	_, a := d.stores(t, d.open(), nil)
	_, b := d.stores(t, d.open(), nil)
	ctx := as("alice")
	v, err := a.Create(ctx, &a2a.Task{ID: "task-1", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		const n = 16
		type result struct {
			v   taskstore.TaskVersion
			ctx string
			err error
		}
		results := make(chan result, n)
		start := make(chan struct{})
		for i := range n {
			st := []*a2atasks.Store{a, b}[i%2]
			go func() {
				<-start
				task := &a2a.Task{ID: "task-1", ContextID: string(rune('a' + i)), Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
				nv, err := st.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: v})
				results <- result{nv, task.ContextID, err}
			}()
		}
		close(start)
		var winner result
		won := 0
		for range n {
			switch r := <-results; {
			case r.err == nil:
				won++
				winner = r
			case !errors.Is(r.err, taskstore.ErrConcurrentModification):
				t.Fatalf("round %d: Update: %v", round, r.err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d of %d updates from version %d won through two pools, want 1", round, won, n, v)
		}
		for _, st := range []*a2atasks.Store{a, b} {
			got, err := st.Get(ctx, "task-1")
			if err != nil || got.Version != winner.v || got.Task.ContextID != winner.ctx {
				t.Fatalf("round %d: Get: %+v, %v; want the winner's version %d", round, got, err, winner.v)
			}
		}
		v = winner.v
	}
}

func TestPostgresReplicaUpdates(t *testing.T) { testReplicaUpdates(t, openPostgres) }
