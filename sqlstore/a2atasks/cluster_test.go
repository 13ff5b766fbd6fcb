package a2atasks_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2asrv/workqueue"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/middleware"
)

// testCluster: the SQL store as the task store of a2a-go's cluster mode. Two
// replicas (two a2a-go handlers in cluster mode, each with its own pool on one
// database and the middleware over its own key store) share a work queue and an
// event queue manager, a2a-go's in-memory ones: the queue hands every execution to
// the replica that registered last, so the other one only accepts sends and
// follows their events. A keyed send to the accepting replica completes, run by the
// other; its retry on either replica gets the same task, read from the store; a
// stream and 16 concurrent identical sends over both run the agent once each.
func testCluster(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	wq := workqueue.NewInMemory(nil)
	qm := eventqueue.NewInMemoryManager()
	alice := func(context.Context, *http.Request) (*a2asrv.User, error) {
		return a2asrv.NewAuthenticatedUser("alice", nil), nil
	}
	replica := func(ag *testkit.Agent) *a2aclient.Client {
		keys, tasks := d.stores(t, d.open(), nil)
		log := slog.New(slog.DiscardHandler)
		h := a2asrv.NewHandler(ag, a2asrv.WithLogger(log), a2asrv.WithCallInterceptors(userInterceptor{}),
			a2asrv.WithClusterMode(a2asrv.ClusterConfig{QueueManager: qm, WorkQueue: wq, TaskStore: tasks}))
		mw, err := middleware.New(keys, middleware.Options{Logger: log,
			Tasks: adapter.NewTaskReader(tasks, adapter.TaskReaderOptions{User: alice})})
		if err != nil {
			t.Fatal(err)
		}
		return jsonrpcClient(t, mw(a2asrv.NewJSONRPCHandler(h)))
	}
	acceptingAgent, runningAgent := &testkit.Agent{}, &testkit.Agent{}
	accepting, running := replica(acceptingAgent), replica(runningAgent) // the queue runs every execution on the second
	ctx := context.Background()
	keyed := func(text string) *a2a.Message {
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
		if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	completed := func(who string, c *a2aclient.Client, msg *a2a.Message) *a2a.Task {
		t.Helper()
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		task, ok := res.(*a2a.Task)
		if err != nil || !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
			t.Fatalf("%s: %#v, %v; want a completed task with one artifact", who, res, err)
		}
		return task
	}

	msg := keyed("hello cluster")
	first := completed("send to the accepting replica", accepting, msg)
	for name, c := range map[string]*a2aclient.Client{"accepting": accepting, "running": running} {
		again := completed("retry on the "+name+" replica", c, msg)
		if again.ID != first.ID {
			t.Errorf("retry on the %s replica answered task %s, want %s", name, again.ID, first.ID)
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: first.ID})
		if err != nil || got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("GetTask on the %s replica: %v, %v", name, got, err)
		}
	}

	var last a2a.Event
	for ev, err := range accepting.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: keyed("stream")}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		last = ev
	}
	// The stream ends with the COMPLETED status update, or, when the execution on the
	// other replica finished before a2a-go's cluster mode subscribed the stream to its
	// queue (seen under load), with the task itself, completed.
	switch ev := last.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if ev.Status.State != a2a.TaskStateCompleted {
			t.Errorf("the stream's last event is %#v, want COMPLETED", last)
		}
	case *a2a.Task:
		if ev.Status.State != a2a.TaskStateCompleted {
			t.Errorf("the stream's last event is %#v, want COMPLETED", last)
		}
	default:
		t.Errorf("the stream's last event is %#v, want COMPLETED", last)
	}

	same := keyed("sixteen at once")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[a2a.TaskID]int{}
	for i := range 16 {
		c := accepting
		if i%2 == 1 {
			c = running
		}
		wg.Go(func() {
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: same})
			mu.Lock()
			defer mu.Unlock()
			if task, ok := res.(*a2a.Task); err == nil && ok {
				ids[task.ID]++
			} else if err == nil || !strings.Contains(err.Error(), "409") { // 409: the first is still running
				t.Errorf("identical send: %#v, %v", res, err)
			}
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Errorf("16 identical sends answered tasks %v, want one", ids)
	}
	if a, r := acceptingAgent.Runs(), runningAgent.Runs(); a != 0 || r != 3 {
		t.Errorf("the agent ran %d times on the accepting replica and %d on the running one for 3 distinct messages, want 0 and 3", a, r)
	}
}

func TestPostgresCluster(t *testing.T) { testCluster(t, openPostgres) }
