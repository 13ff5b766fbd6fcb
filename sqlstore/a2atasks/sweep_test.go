package a2atasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// setClock is a clock the test sets.
type setClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *setClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *setClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// sweepGroup is a kind of key (and its task) the sweep test stores, ten of each.
type sweepGroup struct {
	name string
	// keyAge is how old the key's first claim is; taskAge how long ago its task was
	// last updated (created at keyAge). 0 means the key has no task of its own.
	keyAge, taskAge time.Duration
	state           a2a.TaskState
	// bind: "task", "reply", "missing task" (bound to a task id never stored), or ""
	// (a pending claim whose lease ended long ago).
	bind              string
	keepKey, keepTask bool
}

var sweepGroups = []sweepGroup{
	{"young terminal", time.Hour, time.Hour, a2a.TaskStateCompleted, "task", true, true},
	{"below retention", 30 * time.Hour, 30 * time.Hour, a2a.TaskStateFailed, "task", true, true},
	{"past retention", 50 * time.Hour, 50 * time.Hour, a2a.TaskStateCompleted, "task", false, false},
	{"old but working", 100 * time.Hour, 100 * time.Hour, a2a.TaskStateWorking, "task", true, true},
	{"old key, task finished lately", 100 * time.Hour, time.Hour, a2a.TaskStateCanceled, "task", true, true},
	{"old reply", 100 * time.Hour, 0, "", "reply", false, false},
	{"abandoned claim", 100 * time.Hour, 0, "", "", false, false},
	{"young reply", time.Hour, 0, "", "reply", true, false},
	{"old key, task gone", 60 * time.Hour, 0, "", "missing task", false, false},
}

// testSweep stores tasks and keys of several ages, sweeps from two handles (two pools,
// as two processes) at once, and checks that exactly the old ones went, that no key
// went before its task, and that the reports add up.
func testSweep(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := &setClock{t: now}
	newStores := func() (*sqlstore.Store, *a2atasks.Store) {
		db := d.open()
		keys, err := sqlstore.New(db, sqlstore.Options{Table: d.prefix + "keys", TaskTable: d.prefix + "tasks",
			TTL: 48 * time.Hour, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := a2atasks.New(db, a2atasks.Options{Table: d.prefix + "tasks", Keys: keys, Authenticator: ownerOf, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := tasks.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return keys, tasks
	}
	keys, tasks := newStores()
	ctx := as("alice")
	const perGroup = 10
	wantKeys, wantTasks := map[string]bool{}, map[string]bool{}
	for g, grp := range sweepGroups {
		for i := range perGroup {
			k := fmt.Sprintf("sweep-key-%02d-%04d-0000", g, i)
			id := fmt.Sprintf("task-%02d-%04d", g, i)
			clock.Set(now.Add(-grp.keyAge))
			c, err := keys.Claim(ctx, "", k, "m-"+k, time.Minute)
			if err != nil || c.Status != idempotency.Claimed {
				t.Fatalf("Claim: %v %v", c.Status, err)
			}
			var b idempotency.Binding
			var task *a2a.Task
			var v taskstore.TaskVersion
			switch grp.bind {
			case "task":
				task = &a2a.Task{ID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
				if v, err = tasks.Create(ctx, task); err != nil {
					t.Fatal(err)
				}
				b.TaskID = id
			case "missing task":
				b.TaskID = id
			case "reply":
				b.Reply = []byte(`{"messageId":"r","role":"ROLE_AGENT","parts":[{"text":"hi"}]}`)
			}
			if grp.bind != "" {
				if err := keys.Bind(ctx, "", k, c.Token, b); err != nil {
					t.Fatal(err)
				}
			}
			if task != nil {
				clock.Set(now.Add(-grp.taskAge))
				task.Status.State = grp.state
				if _, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: v}); err != nil {
					t.Fatal(err)
				}
			}
			if grp.keepKey {
				wantKeys[k] = true
			}
			if grp.keepTask {
				wantTasks[id] = true
			}
		}
	}
	clock.Set(now)

	policy := idempotency.RetentionPolicy{KeyMaxAge: 24 * time.Hour, TerminalTaskRetention: 48 * time.Hour, BatchSize: 3}
	_, tasks2 := newStores()
	reports := make(chan idempotency.PurgeReport, 2)
	errs := make(chan error, 2)
	start := make(chan struct{})
	for _, st := range []*a2atasks.Store{tasks, tasks2} {
		go func() {
			<-start
			r, err := st.PurgeExpired(context.Background(), policy)
			reports <- r
			errs <- err
		}()
	}
	close(start)
	var sum idempotency.PurgeReport
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("PurgeExpired: %v", err)
		}
		r := <-reports
		t.Logf("one sweep: %+v", r)
		sum.TasksDeleted += r.TasksDeleted
		sum.KeysDeleted += r.KeysDeleted
		if !r.Complete {
			t.Errorf("a sweep without MaxBatches reported incomplete: %+v", r)
		}
	}
	if sum.TasksDeleted != 1*perGroup || sum.KeysDeleted != 4*perGroup {
		t.Errorf("the two sweeps deleted %d tasks and %d keys, want %d and %d", sum.TasksDeleted, sum.KeysDeleted, perGroup, 4*perGroup)
	}

	gotKeys := column(t, d, `SELECT "key" FROM `+quote(d.prefix+"keys"))
	gotTasks := column(t, d, `SELECT id FROM `+quote(d.prefix+"tasks"))
	for g, grp := range sweepGroups {
		k, id := fmt.Sprintf("sweep-key-%02d-0000-0000", g), fmt.Sprintf("task-%02d-0000", g)
		if gotKeys[k] != grp.keepKey {
			t.Errorf("%s: key kept = %v, want %v", grp.name, gotKeys[k], grp.keepKey)
		}
		if grp.bind == "task" && gotTasks[id] != grp.keepTask {
			t.Errorf("%s: task kept = %v, want %v", grp.name, gotTasks[id], grp.keepTask)
		}
		// No key went before its task.
		if grp.bind == "task" && gotTasks[id] && !gotKeys[k] {
			t.Errorf("%s: the key was deleted while its task remains", grp.name)
		}
	}
	if len(gotKeys) != len(wantKeys) || len(gotTasks) != len(wantTasks) {
		t.Errorf("left %d keys and %d tasks, want %d and %d", len(gotKeys), len(gotTasks), len(wantKeys), len(wantTasks))
	}

	// A second sweep finds nothing; MaxBatches bounds each table and Complete is exact.
	r, err := tasks.PurgeExpired(context.Background(), policy)
	if err != nil || r.TasksDeleted != 0 || r.KeysDeleted != 0 || !r.Complete {
		t.Errorf("second sweep: %+v, %v; want nothing deleted, complete", r, err)
	}
	clock.Set(now.Add(100 * time.Hour)) // now every terminal task is old
	tasksOnly := idempotency.RetentionPolicy{KeyMaxAge: -1, TerminalTaskRetention: 48 * time.Hour, BatchSize: 2, MaxBatches: 1}
	r, err = tasks.PurgeExpired(context.Background(), tasksOnly)
	if err != nil || r.TasksDeleted != 2 || r.KeysDeleted != 0 || r.Batches != 1 || r.Complete {
		t.Errorf("a sweep of one batch of tasks, keys disabled: %+v, %v; want 2 tasks, 1 batch, incomplete", r, err)
	}
	tasksOnly.BatchSize = 3 * perGroup // more than the terminal tasks left
	r, err = tasks.PurgeExpired(context.Background(), tasksOnly)
	if err != nil || r.TasksDeleted != 3*perGroup-2 || r.Batches != 1 || !r.Complete {
		t.Errorf("a sweep of the remaining tasks in one batch: %+v, %v; want %d tasks, 1 batch, complete", r, err, 3*perGroup-2)
	}
}

// column returns the values of a one-column query as a set.
func column(t *testing.T, d testDB, query string) map[string]bool {
	t.Helper()
	var vals []string
	if err := d.open().Select(&vals, query); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, v := range vals {
		set[v] = true
	}
	return set
}

func quote(table string) string {
	return `"` + strings.ReplaceAll(table, ".", `"."`) + `"`
}

func TestPostgresSweep(t *testing.T) { testSweep(t, openPostgres) }
