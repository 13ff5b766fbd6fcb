package a2atasks_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// userInterceptor names every caller "alice", as an authentication middleware would,
// so that List (which refuses anonymous callers) has an owner.
type userInterceptor struct {
	a2asrv.PassthroughCallInterceptor
}

func (userInterceptor) Before(ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	callCtx.User = a2asrv.NewAuthenticatedUser("alice", nil)
	return ctx, nil, nil
}

// newServer returns a JSON-RPC a2a-go server on store with the echo agent; with keys,
// behind the kit (middleware over keys, the adapter's Executor and FollowUpBinder).
func newServer(ag *testkit.Agent, store taskstore.Store, keys idempotency.KeyIndex) (http.Handler, error) {
	log := slog.New(slog.DiscardHandler)
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(store), a2asrv.WithLogger(log),
		a2asrv.WithCallInterceptors(userInterceptor{})}
	var exec a2asrv.AgentExecutor = ag
	if keys != nil {
		aopts := adapter.Options{Logger: log}
		exec = adapter.NewExecutor(ag, aopts)
		opts = append(opts, a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, aopts)))
	}
	h := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(exec, opts...))
	if keys == nil {
		return h, nil
	}
	mw, err := middleware.New(keys, middleware.Options{Logger: log, Tasks: adapter.NewTaskReader(store, adapter.TaskReaderOptions{})})
	if err != nil {
		return nil, err
	}
	return mw(h), nil
}

// testServer: a real a2a-go server with the SQL store sends, gets and lists through
// a2a-go's client; a second server on the same database (a restart) reads the task.
func testServer(t *testing.T, open func(t testing.TB) testDB) {
	d := open(t)
	newStore := func() *a2atasks.Store {
		st, err := a2atasks.New(d.open(), a2atasks.Options{Table: d.prefix + "tasks"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	ctx := context.Background()
	ag := &testkit.Agent{}
	h, err := newServer(ag, newStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonrpcClient(t, h)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("SendMessage answered %#v, want a completed task with one artifact", res)
	}
	got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || mustJSON(t, got.Artifacts) != mustJSON(t, task.Artifacts) {
		t.Fatalf("GetTask: %v, %v", got, err)
	}
	list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID || list.TotalSize != 1 {
		t.Fatalf("ListTasks: %v, %v", list, err)
	}

	// A second server process on the same database, as after a restart or on another
	// replica, reads the task the first one stored.
	c2 := jsonrpcClient(t, must(newServer(&testkit.Agent{}, newStore(), nil)))
	again, err := c2.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || mustJSON(t, again) != mustJSON(t, got) {
		t.Fatalf("GetTask on a restarted server: %v, %v; want %v", again, err, got)
	}
	if n := ag.Runs(); n != 1 {
		t.Errorf("the agent ran %d times, want 1", n)
	}
}

// jsonrpcClient serves h, a JSON-RPC handler, until the test ends, and returns an
// a2a-go client of it.
func jsonrpcClient(t *testing.T, h http.Handler) *a2aclient.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPostgresServer(t *testing.T) { testServer(t, openPostgres) }
