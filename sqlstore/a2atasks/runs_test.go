package a2atasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// runStores returns a migrated key store and task store on db with the given clock
// (nil: the database's) and run lease.
func (d testDB) runStores(t testing.TB, db *sqlx.DB, now func() time.Time, runLease time.Duration) (*sqlstore.Store, *a2atasks.Store) {
	t.Helper()
	keys, err := sqlstore.New(db, sqlstore.Options{Table: d.prefix + "keys", TaskTable: d.prefix + "tasks", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{Table: d.prefix + "tasks", Keys: keys, Now: now, RunLease: runLease, Authenticator: ownerOf})
	if err != nil {
		t.Fatal(err)
	}
	if err := tasks.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return keys, tasks
}

// claimed claims a fresh key through the middleware's keyed-send logic over keys, and
// returns the context a forwarded send runs in (it carries the claim) and the key.
func claimed(t *testing.T, keys idempotency.KeyIndex, messageID string) (context.Context, string) {
	t.Helper()
	sends, err := middleware.NewSends(keys, middleware.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := idempotency.NewKey()
	step := sends.Begin(context.Background(), &middleware.Send{Binding: middleware.BindingJSONRPC, Key: key, MessageID: messageID},
		func() (string, error) { return "", nil })
	if step.Forward == nil {
		t.Fatalf("the key was not claimed: %+v", step)
	}
	return step.Forward, key
}

// newTask returns a submitted task whose history holds message messageID.
func newTask(messageID string) *a2a.Task {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	msg.ID = messageID
	return &a2a.Task{ID: a2a.NewTaskID(), ContextID: a2a.NewContextID(), History: []*a2a.Message{msg},
		Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
}

// testCreateBindsInOneTransaction: the first save of a task in the context of a keyed
// send binds the send's key in the same transaction. A real trigger that fails the
// key's UPDATE (between the task's INSERT and the bind, in the transaction) leaves
// neither committed: no task, the key still pending. Once the trigger is gone, the
// same save stores the task and binds the key.
func testCreateBindsInOneTransaction(t *testing.T, open func(t testing.TB) testDB, installTrigger, dropTrigger func(d testDB) []string) {
	d := open(t)
	db := d.open()
	keys, tasks := d.runStores(t, db, nil, 0)
	ctx, key := claimed(t, keys, "m-tx")
	task := newTask("m-tx")
	for _, stmt := range installTrigger(d) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("install the failing trigger: %v", err)
		}
	}
	if _, err := tasks.Create(ctx, task); err == nil || !strings.Contains(err.Error(), "injected bind failure") {
		t.Fatalf("Create with the bind failing: %v, want the trigger's error", err)
	}
	var n int
	if err := db.Get(&n, db.Rebind(`SELECT COUNT(*) FROM `+quoted(d.prefix+"tasks")+` WHERE id = ?`), string(task.ID)); err != nil || n != 0 {
		t.Errorf("after the failed bind the task table holds %d rows of the task (err %v), want none", n, err)
	}
	if rec, found, err := keys.Lookup(context.Background(), "", key); err != nil || !found || !rec.Pending() {
		t.Errorf("after the failed bind the key is %+v found=%v (err %v), want pending", rec, found, err)
	}

	for _, stmt := range dropTrigger(d) {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("drop the failing trigger: %v", err)
		}
	}
	if _, err := tasks.Create(ctx, task); err != nil {
		t.Fatalf("Create once the trigger is gone: %v", err)
	}
	if rec, found, err := keys.Lookup(context.Background(), "", key); err != nil || !found || rec.TaskID != string(task.ID) {
		t.Errorf("after the save the key is %+v found=%v (err %v), want bound to %s", rec, found, err, task.ID)
	}
	if _, err := tasks.Get(context.Background(), task.ID); err != nil {
		t.Errorf("Get after the save: %v", err)
	}
	// A task id already stored binds nothing: the key stays bound to its task.
	ctx2, key2 := claimed(t, keys, "m-tx2")
	if _, err := tasks.Create(ctx2, task); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Errorf("Create of a stored id: %v, want ErrTaskAlreadyExists", err)
	}
	if rec, _, err := keys.Lookup(context.Background(), "", key2); err != nil || !rec.Pending() {
		t.Errorf("after a refused Create the other key is %+v (err %v), want pending", rec, err)
	}
}

// quoted quotes a possibly schema-qualified table name.
func quoted(table string) string {
	return `"` + strings.ReplaceAll(table, ".", `"."`) + `"`
}

// testStoppedRunsEnd: a task saved in a live execution's context is watched; a
// process whose liveness lies a run lease or more in the past (here: a store whose
// clock is behind, so that its heartbeats never reach now) has stopped, and Get on
// another store ends its task as FAILED with the stopped message, as do the sweep and
// Restarted; a store that sees the liveness running leaves the task alone. A task in
// a state where no execution works on it (INPUT_REQUIRED) is never ended.
func testStoppedRunsEnd(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	const lease = time.Minute
	t0 := time.Now().Add(-time.Hour)
	at := func(t time.Time) func() time.Time { return func() time.Time { return t } }
	_, dead := d.runStores(t, d.open(), at(t0), lease)
	_, during := d.runStores(t, d.open(), at(t0.Add(lease/2)), lease)
	_, after := d.runStores(t, d.open(), at(t0.Add(lease+time.Second)), lease)

	run, stop := context.WithCancel(context.Background())
	defer stop()
	var ids []a2a.TaskID
	for range 3 {
		task := newTask(testkit.RandomName("m-"))
		if _, err := dead.Create(run, task); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	waiting := newTask("m-waits")
	waiting.Status.State = a2a.TaskStateInputRequired
	if _, err := dead.Create(run, waiting); err != nil {
		t.Fatal(err)
	}
	if got, err := during.Get(context.Background(), ids[0]); err != nil || got.Task.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("Get while the run's liveness lasts: %+v, %v; want the task submitted", got, err)
	}
	got, err := after.Get(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	checkStopped(t, got)
	again, err := during.Get(context.Background(), ids[0])
	if err != nil || again.Version != got.Version || again.Task.Status.State != a2a.TaskStateFailed {
		t.Errorf("Get after the task was ended: %+v, %v; want the failed task, version %d", again, err, got.Version)
	}
	if _, err := after.PurgeExpired(context.Background(), idempotency.RetentionPolicy{}); err != nil {
		t.Fatal(err)
	}
	if got, err := during.Get(context.Background(), ids[1]); err != nil {
		t.Fatal(err)
	} else {
		checkStopped(t, got)
	}
	if ended, _, err := during.Restarted(context.Background()); err != nil || ended != 0 {
		t.Errorf("Restarted after the sweep ended %d tasks (err %v), want 0", ended, err)
	}
	if got, err := during.Get(context.Background(), waiting.ID); err != nil || got.Task.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("a task waiting for input: %+v, %v; want it left alone", got, err)
	}

	// Restarted ends a watched run's task at once, whatever its liveness says.
	task := newTask("m-restart")
	if _, err := dead.Create(run, task); err != nil {
		t.Fatal(err)
	}
	if ended, _, err := during.Restarted(context.Background()); err != nil || ended != 1 {
		t.Errorf("Restarted ended %d tasks (err %v), want 1", ended, err)
	}
	if got, err := during.Get(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	} else {
		checkStopped(t, got)
	}
}

// checkStopped checks that got was ended because its server stopped.
func checkStopped(t *testing.T, got *taskstore.StoredTask) {
	t.Helper()
	st := got.Task.Status
	if st.State != a2a.TaskStateFailed || st.Message == nil || len(st.Message.Parts) != 1 ||
		st.Message.Parts[0].Text() != a2atasks.StoppedText || st.Message.Role != a2a.MessageRoleAgent || st.Timestamp == nil {
		t.Errorf("task %s after its run stopped: status %+v, want FAILED with the stopped message", got.Task.ID, st)
	}
}

// testLiveRunsKept: while an execution goes on, the store renews its liveness, so
// another store never ends its task, however long it runs; when the execution's
// context ends with the task still active (the run ended in a live process), nothing
// is watched any more and the task is left as it is.
func testLiveRunsKept(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	const lease = 300 * time.Millisecond
	_, live := d.runStores(t, d.open(), nil, lease)
	_, other := d.runStores(t, d.open(), nil, lease)
	run, stop := context.WithCancel(context.Background())
	task := newTask("m-live")
	if _, err := live.Create(run, task); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if got, err := other.Get(context.Background(), task.ID); err != nil || got.Task.Status.State != a2a.TaskStateSubmitted {
			t.Errorf("Get %s: %+v, %v; want the task as it was", when, got, err)
		}
	}
	time.Sleep(4 * lease)
	check("while the run goes on, four run leases after its save")
	stop()
	time.Sleep(3 * lease)
	check("after the run ended in a live process")
}

// testAgentFailingBeforeFirstEvent: behind the middleware and the adapter, on this
// store, an agent that fails before its first event stores no task and binds
// nothing; the identical retry runs the agent (once more), and its task is stored and
// bound.
func testAgentFailingBeforeFirstEvent(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	keys, tasks := d.stores(t, d.open(), nil)
	ag := &testkit.Agent{Script: func(ctx context.Context, ec *a2asrv.ExecutorContext, text string, run int64) (a2a.Event, error) {
		if run == 1 {
			return nil, errors.New("the agent failed before its first event")
		}
		return nil, nil
	}}
	h, err := newServer(ag, tasks, keys)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonrpcClient(t, h)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("fail first"))
	key := idempotency.NewKey()
	if err := adapter.SetMessageKey(msg, key); err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), ownerKey{}, "alice")
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg}); err == nil {
		t.Fatal("the send whose agent failed returned no error")
	}
	if _, held, err := keys.Lookup(ctx, "", key); err != nil || held {
		t.Fatalf("after the agent failed before its first event the key is held=%v (err %v), want released", held, err)
	}
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("identical retry: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("identical retry returned %#v, want a completed task", res)
	}
	if rec, _, err := keys.Lookup(ctx, "", key); err != nil || rec.TaskID != string(task.ID) {
		t.Errorf("the key is %+v (err %v), want bound to %s", rec, err, task.ID)
	}
	if n := ag.RunsOf(msg.ID); n != 2 {
		t.Errorf("the agent ran %d times, want 2 (the failed run and the retry's)", n)
	}
}

func TestPostgresCreateBindsInOneTransaction(t *testing.T) {
	schema := func(d testDB) string { return `"` + strings.TrimSuffix(d.prefix, ".") + `"` }
	testCreateBindsInOneTransaction(t, openPostgres, func(d testDB) []string {
		return []string{
			`CREATE FUNCTION ` + schema(d) + `.fail_bind() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'injected bind failure'; END $$`,
			`CREATE TRIGGER fail_bind BEFORE UPDATE ON ` + quoted(d.prefix+"keys") + ` FOR EACH ROW EXECUTE FUNCTION ` + schema(d) + `.fail_bind()`,
		}
	}, func(d testDB) []string {
		return []string{`DROP TRIGGER fail_bind ON ` + quoted(d.prefix+"keys")}
	})
}

func TestPostgresStoppedRunsEnd(t *testing.T) { testStoppedRunsEnd(t, openPostgres) }
func TestPostgresLiveRunsKept(t *testing.T)   { testLiveRunsKept(t, openPostgres) }
func TestPostgresAgentFailingBeforeFirstEvent(t *testing.T) {
	testAgentFailingBeforeFirstEvent(t, openPostgres)
}
