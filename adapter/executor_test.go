package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// keyedServer is an a2a-go server for agent, with the adapter's hooks installed and
// the kit's middleware in front of it, claiming keys in index.
func keyedServer(t *testing.T, agent a2asrv.AgentExecutor, index idempotency.KeyIndex, opts middleware.Options, handlerOpts ...a2asrv.RequestHandlerOption) *testkit.Running {
	t.Helper()
	mw, err := middleware.New(index, opts)
	if err != nil {
		t.Fatal(err)
	}
	store := adapter.NewBindingStore(testkit.NewStore(), adapter.Options{})
	handlerOpts = append(handlerOpts, a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, adapter.Options{})))
	return testkit.NewServer(t, testkit.Config{Executor: adapter.NewExecutor(agent, adapter.Options{}),
		Wrap:           mw,
		HandlerOptions: handlerOpts,
		TaskStore:      store,
	})
}

// client returns a plain a2a-go client of card's interface for binding.
func client(t *testing.T, card *a2a.AgentCard, binding a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	c, err := a2aclient.NewFromCard(context.Background(), card,
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keyedMessage returns a user message carrying a fresh key.
func keyedMessage(t *testing.T, text string) (*a2a.Message, string) {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	key := idempotency.NewKey()
	if err := adapter.SetMessageKey(msg, key); err != nil {
		t.Fatal(err)
	}
	return msg, key
}

// failedClosed reports whether err is the middleware's fail-closed answer to a send
// whose key could not be bound: HTTP 503, which a2a-go's JSON-RPC client reports by
// status and its REST client by the message.
func failedClosed(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "503 Service Unavailable") ||
		strings.Contains(err.Error(), "idempotency index is unavailable"))
}

var bindings = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON}

// A blocking send whose agent is still running: the client's connection is cut, and
// the retry returns the same task at once, in its working state, without running the
// agent again; once the agent finishes, a retry shows the completed task.
func TestBlockingSendCutMidRunIsReplayedWhileRunning(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent := &testkit.Agent{Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
			srv := keyedServer(t, agent, memstore.New(memstore.Options{}), middleware.Options{})
			c := client(t, srv.Card, binding)
			msg, _ := keyedMessage(t, "long job")

			ctx, cut := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
				first <- err
			}()
			taskID := <-agent.Started
			testkit.WaitFor(t, "the task to be working", func() bool {
				task := srv.Task(t, taskID)
				return task != nil && task.Status.State == a2a.TaskStateWorking
			})
			cut()
			if err := <-first; err == nil {
				t.Fatal("the cut send returned no error")
			}

			res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry while running: %v", err)
			}
			task, ok := res.(*a2a.Task)
			if !ok {
				t.Fatalf("retry while running returned %T, want *a2a.Task", res)
			}
			if task.ID != taskID || task.Status.State != a2a.TaskStateWorking {
				t.Errorf("retry while running: task %s in %s, want %s in %s", task.ID, task.Status.State, taskID, a2a.TaskStateWorking)
			}

			close(agent.Hold)
			testkit.WaitFor(t, "the task to complete", func() bool {
				return srv.Task(t, taskID).Status.State == a2a.TaskStateCompleted
			})
			res, err = c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry after completion: %v", err)
			}
			task, ok = res.(*a2a.Task)
			if !ok || task.ID != taskID || task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("retry after completion returned %#v, want task %s completed", res, taskID)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// The key is bound to its task once the task is stored, not before: while the agent
// starts (before its first event) the key is pending, and once a2a-go stored the
// task the index names it. This also proves that the request context, with the
// middleware's claim, reaches the task store.
func TestKeyBoundWhenTaskStored(t *testing.T) {
	index := memstore.New(memstore.Options{})
	agent := &testkit.Agent{Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
	srv := keyedServer(t, agent, index, middleware.Options{})
	c := client(t, srv.Card, a2a.TransportProtocolJSONRPC)
	msg, key := keyedMessage(t, "bind on save")

	done := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		done <- err
	}()
	taskID := <-agent.Started
	// The agent has not yielded yet (it waits for Started to be read before its
	// first event); the key is pending unless the task is stored already.
	rec, ok, err := index.Lookup(context.Background(), "", key)
	if err != nil || !ok {
		t.Fatalf("Lookup as the agent starts: ok=%v err=%v", ok, err)
	}
	if !rec.Pending() && srv.Task(t, taskID) == nil {
		t.Errorf("as the agent starts the key names task %q, which is not stored", rec.TaskID)
	}
	testkit.WaitFor(t, "the task to be working", func() bool {
		task := srv.Task(t, taskID)
		return task != nil && task.Status.State == a2a.TaskStateWorking
	})
	rec, ok, err = index.Lookup(context.Background(), "", key)
	if err != nil || !ok || rec.TaskID != string(taskID) || rec.MessageID != msg.ID {
		t.Errorf("once the task is stored the key names task %q for message %q (ok=%v err=%v), want %q for %q",
			rec.TaskID, rec.MessageID, ok, err, taskID, msg.ID)
	}
	close(agent.Hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// An agent that answers with a Message: the first response is lost on its way back,
// and the retry gets the same Message, without running the agent again.
func TestMessageReplyLostIsReplayed(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := memstore.New(memstore.Options{})
			agent := &testkit.Agent{ReplyMessage: true}
			srv := keyedServer(t, agent, index, middleware.Options{})
			proxy := testkit.NewProxy(t, srv.URL, func(n int) bool { return n == 1 })
			card := *srv.Card
			card.SupportedInterfaces = []*a2a.AgentInterface{
				a2a.NewAgentInterface(proxy.URL+"/jsonrpc", a2a.TransportProtocolJSONRPC),
				a2a.NewAgentInterface(proxy.URL+"/rest", a2a.TransportProtocolHTTPJSON),
			}
			c := client(t, &card, binding)
			msg, key := keyedMessage(t, "hello")

			if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err == nil {
				t.Fatal("the send whose response was lost returned no error")
			}
			rec, ok, err := index.Lookup(context.Background(), "", key)
			if err != nil || !ok || rec.Reply == nil {
				t.Fatalf("after the first attempt the key holds no reply: %+v ok=%v err=%v", rec, ok, err)
			}

			res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			reply, ok := res.(*a2a.Message)
			if !ok {
				t.Fatalf("retry returned %T, want *a2a.Message", res)
			}
			if reply.Role != a2a.MessageRoleAgent || len(reply.Parts) != 1 || reply.Parts[0].Text() != "reply: hello" {
				t.Errorf("retry returned %+v, want the agent's reply", reply)
			}
			if !strings.Contains(string(rec.Reply), reply.ID) {
				t.Errorf("retry returned message %s, but the recorded reply is %s", reply.ID, rec.Reply)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
			if n := proxy.Posts(); n != 2 {
				t.Errorf("%d sends reached the proxy, want 2", n)
			}
		})
	}
}

// An agent that will answer with a Message is still thinking when the retry comes:
// the key is bound to a task id that a2a-go never stores (no task is created for a
// Message reply), so the retry must be told to come back (409 with Retry-After), not
// that the task is gone. Once the agent has answered, the retry gets the Message. The
// agent runs once.
func TestRetryWhileMessageAgentThinksIsInFlight(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := memstore.New(memstore.Options{})
			agent := &testkit.Agent{ReplyMessage: true, Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
			srv := keyedServer(t, agent, index, middleware.Options{ReplayWait: 100 * time.Millisecond})
			c := client(t, srv.Card, binding)
			msg, _ := keyedMessage(t, "think hard")

			first := make(chan error, 1)
			go func() {
				_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
				first <- err
			}()
			<-agent.Started
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			switch {
			case err == nil:
				t.Fatal("retry while the agent thinks succeeded")
			case errors.Is(err, a2a.ErrTaskNotFound):
				t.Fatalf("retry while the agent thinks: %v, want in flight, not TaskNotFound", err)
			case !strings.Contains(err.Error(), "409") && !strings.Contains(err.Error(), "still in flight"):
				t.Fatalf("retry while the agent thinks: %v, want 409 still in flight", err)
			}
			close(agent.Hold)
			if err := <-first; err != nil {
				t.Fatalf("first send: %v", err)
			}
			res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if _, ok := res.(*a2a.Message); err != nil || !ok {
				t.Fatalf("retry after the answer: %T %v, want the Message", res, err)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// An agent that fails before its first event: no task was stored, so the claim is
// released and the identical retry runs the agent (once more), on both bindings,
// unary and streaming.
func TestAgentFailingBeforeFirstEventRunsOnRetry(t *testing.T) {
	for _, binding := range bindings {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", binding, streaming), func(t *testing.T) {
				index := memstore.New(memstore.Options{})
				agent := &testkit.Agent{Script: failFirstRun}
				srv := keyedServer(t, agent, index, middleware.Options{})
				c := client(t, srv.Card, binding)
				msg, key := keyedMessage(t, "fail first")
				send := func() (a2a.Event, error) {
					req := &a2a.SendMessageRequest{Message: msg}
					if !streaming {
						return c.SendMessage(context.Background(), req)
					}
					var last a2a.Event
					for ev, err := range c.SendStreamingMessage(context.Background(), req) {
						if err != nil {
							return nil, err
						}
						last = ev
					}
					return last, nil
				}
				if _, err := send(); err == nil {
					t.Fatal("the send whose agent failed returned no error")
				}
				if _, held, err := index.Lookup(context.Background(), "", key); err != nil || held {
					t.Fatalf("after the agent failed before its first event the key is held=%v (err %v), want released", held, err)
				}
				res, err := send()
				if err != nil {
					t.Fatalf("identical retry: %v", err)
				}
				if streaming {
					if ev, ok := res.(*a2a.TaskStatusUpdateEvent); !ok || ev.Status.State != a2a.TaskStateCompleted {
						t.Errorf("identical retry's last event %#v, want the completed status", res)
					}
				} else if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
					t.Errorf("identical retry returned %#v, want a completed task", res)
				}
				if n := agent.RunsOf(msg.ID); n != 2 {
					t.Errorf("the agent ran %d times, want 2 (the failed run and the retry's)", n)
				}
			})
		}
	}
}

// failFirstRun is a testkit.Agent script: the first run of each message fails before
// its first event; later runs go on as configured.
func failFirstRun(ctx context.Context, ec *a2asrv.ExecutorContext, text string, run int64) (a2a.Event, error) {
	if run == 1 {
		return nil, errors.New("the agent failed before its first event")
	}
	return nil, nil
}

// An agent that answers with a Message after the client has gone: no response ever
// carried the Message, so only the adapter, which records it before passing it on,
// can give it to the retry. The agent runs once.
func TestMessageReplyAfterClientLeftIsReplayed(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := memstore.New(memstore.Options{})
			agent := &testkit.Agent{ReplyMessage: true, Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
			srv := keyedServer(t, agent, index, middleware.Options{})
			c := client(t, srv.Card, binding)
			msg, key := keyedMessage(t, "think hard")

			ctx, cut := context.WithCancel(context.Background())
			first := make(chan error, 1)
			go func() {
				_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
				first <- err
			}()
			<-agent.Started
			cut()
			if err := <-first; err == nil {
				t.Fatal("the cut send returned no error")
			}
			close(agent.Hold)
			testkit.WaitFor(t, "the reply to be recorded", func() bool {
				rec, ok, err := index.Lookup(context.Background(), "", key)
				return err == nil && ok && rec.Reply != nil
			})

			res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			reply, ok := res.(*a2a.Message)
			if !ok || len(reply.Parts) != 1 || reply.Parts[0].Text() != "reply: think hard" {
				t.Errorf("retry returned %#v, want the agent's reply", res)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// When the index fails to bind the key once the task is stored, the agent has run: the
// key is never released (a retry must not run the agent again), so it stays pending,
// and a retry is told the first attempt is in flight until the lease ends.
func TestBindFailureKeepsKeyPending(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			agent := &testkit.Agent{}
			srv := keyedServer(t, agent, index, middleware.Options{ReplayWait: -1})
			c := client(t, srv.Card, binding)
			msg, key := keyedMessage(t, "unlucky")

			index.SetFail(testkit.OpBind, true)
			if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err != nil {
				t.Fatalf("first send: %v, want the agent's task", err)
			}
			if n := agent.Runs(); n != 1 {
				t.Fatalf("agent ran %d times, want 1", n)
			}
			index.SetFail(testkit.OpBind, false)
			rec, held, err := index.Lookup(context.Background(), "", key)
			if err != nil || !held || !rec.Pending() {
				t.Errorf("after the failed binds the key is held=%v pending=%v (err %v), want held and pending", held, rec.Pending(), err)
			}
			_, err = c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if err == nil || !strings.Contains(err.Error(), "409") && !strings.Contains(err.Error(), "still in flight") {
				t.Errorf("retry: %v, want 409 still in flight", err)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// Unkeyed sends pass the hooks untouched and leave nothing in the index.
func TestUnkeyedSendUntouched(t *testing.T) {
	index := memstore.New(memstore.Options{})
	agent := &testkit.Agent{}
	srv := keyedServer(t, agent, index, middleware.Options{})
	c := client(t, srv.Card, a2a.TransportProtocolJSONRPC)

	for range 2 {
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("no key"))
		res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("unkeyed send returned %#v, want a completed task", res)
		}
	}
	if n := agent.Runs(); n != 2 {
		t.Errorf("agent ran %d times for two unkeyed sends, want 2", n)
	}
	capa, err := index.Capacity(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if capa.Held != 0 {
		t.Errorf("unkeyed sends left %d keys in the index, want 0", capa.Held)
	}
}

// newTaskAwaitingInput creates, through c, a task that waits for a follow-up.
func newTaskAwaitingInput(t *testing.T, c *a2aclient.Client) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("start")),
	})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first send returned %#v, want a task awaiting input", res)
	}
	return task
}

// followUp returns a keyed follow-up message to task.
func followUp(t *testing.T, task *a2a.Task, text string) (*a2a.Message, string) {
	t.Helper()
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart(text))
	key := idempotency.NewKey()
	if err := adapter.SetMessageKey(msg, key); err != nil {
		t.Fatal(err)
	}
	return msg, key
}

// A keyed follow-up to an existing task is bound to that task before the agent runs,
// and a retry gets the task.
func TestFollowUpBoundToExistingTask(t *testing.T) {
	index := memstore.New(memstore.Options{})
	// The first run takes the one release in Hold; the follow-up waits for the next.
	agent := &testkit.Agent{AskFirst: true, Started: make(chan a2a.TaskID, 2), Hold: make(chan struct{}, 1)}
	agent.Hold <- struct{}{}
	srv := keyedServer(t, agent, index, middleware.Options{})
	c := client(t, srv.Card, a2a.TransportProtocolJSONRPC)
	task := newTaskAwaitingInput(t, c)
	<-agent.Started

	msg, key := followUp(t, task, "more")
	done := make(chan error, 1)
	go func() {
		_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		done <- err
	}()
	if id := <-agent.Started; id != task.ID {
		t.Fatalf("follow-up ran for task %s, want %s", id, task.ID)
	}
	rec, ok, err := index.Lookup(context.Background(), "", key)
	if err != nil || !ok || rec.TaskID != string(task.ID) {
		t.Errorf("while the follow-up runs the key holds %+v (ok=%v, err=%v), want task %s", rec, ok, err, task.ID)
	}
	close(agent.Hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := res.(*a2a.Task); !ok || got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted {
		t.Errorf("retry of the follow-up returned %#v, want task %s completed", res, task.ID)
	}
	if n := agent.Runs(); n != 2 {
		t.Errorf("agent ran %d times for a task and one follow-up, want 2", n)
	}
}

// With FollowUpBinder, a follow-up whose binding fails is refused with an error, the
// agent does not run, and the task is left as it was.
func TestFollowUpBindFailureLeavesTaskAlone(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			agent := &testkit.Agent{AskFirst: true}
			srv := keyedServer(t, agent, index, middleware.Options{})
			c := client(t, srv.Card, binding)
			task := newTaskAwaitingInput(t, c)

			index.SetFail(testkit.OpBind, true)
			msg, _ := followUp(t, task, "more")
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if !failedClosed(err) {
				t.Errorf("follow-up with a failing bind: error %v, want the middleware's 503", err)
			}
			streamed, _ := followUp(t, task, "more, streamed")
			var streamErr error
			for _, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: streamed}) {
				if err != nil {
					streamErr = err
				}
			}
			if streamErr == nil || !strings.Contains(streamErr.Error(), "could not be bound") {
				t.Errorf("streaming follow-up with a failing bind: error %v, want the adapter's refusal", streamErr)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1 (the follow-up must not run)", n)
			}
			stored := srv.Task(t, task.ID)
			if stored.Status.State != a2a.TaskStateInputRequired || len(stored.History) != len(task.History) {
				t.Errorf("after the refused follow-up the task is %s with %d messages, want %s with %d",
					stored.Status.State, len(stored.History), a2a.TaskStateInputRequired, len(task.History))
			}
		})
	}
}

// Without FollowUpBinder, the Executor alone still keeps the agent from running when a
// follow-up's binding fails, but a2a-go v2.4.0 turns the executor's error on an
// existing task into a FAILED task. This pins the behaviour the documentation of
// Executor and FollowUpBinder describes.
func TestFollowUpBindFailureWithoutBinderFailsTask(t *testing.T) {
	index := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
	agent := &testkit.Agent{AskFirst: true}
	mw, err := middleware.New(index, middleware.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := testkit.NewServer(t, testkit.Config{Executor: adapter.NewExecutor(agent, adapter.Options{}), Wrap: mw})
	c := client(t, srv.Card, a2a.TransportProtocolJSONRPC)
	task := newTaskAwaitingInput(t, c)

	index.SetFail(testkit.OpBind, true)
	msg, _ := followUp(t, task, "more")
	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatalf("a2a-go answered the failed follow-up with an error (%v); if it no longer fails the task, update the docs of Executor and FollowUpBinder", err)
	}
	if got, ok := res.(*a2a.Task); !ok || got.Status.State != a2a.TaskStateFailed {
		t.Errorf("failed follow-up returned %#v, want the task FAILED", res)
	}
	if n := agent.Runs(); n != 1 {
		t.Errorf("agent ran %d times, want 1 (the follow-up must not run)", n)
	}
}

// A keyed streaming send cut mid-run: the re-send with the same key re-attaches to the
// task. Its first event is the task in its current state, and the live events follow
// until the task completes; the agent runs once.
func TestStreamingSendCutMidRunReattaches(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent := &testkit.Agent{Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
			srv := keyedServer(t, agent, memstore.New(memstore.Options{}), middleware.Options{})
			c := client(t, srv.Card, binding)
			msg, _ := keyedMessage(t, "stream me")

			ctx, cut := context.WithCancel(context.Background())
			var taskID a2a.TaskID
			for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: msg}) {
				if err != nil {
					t.Fatal(err)
				}
				if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && st.Status.State == a2a.TaskStateWorking {
					taskID = st.TaskID
					break
				}
			}
			cut()
			if taskID == "" {
				t.Fatal("the stream ended before the task was working")
			}

			var events []a2a.Event
			released := false
			for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}) {
				if err != nil {
					t.Fatalf("re-send: %v", err)
				}
				events = append(events, ev)
				if !released {
					released = true
					close(agent.Hold)
				}
			}
			if len(events) == 0 {
				t.Fatal("the re-send yielded no events")
			}
			first, ok := events[0].(*a2a.Task)
			if !ok || first.ID != taskID || first.Status.State != a2a.TaskStateWorking {
				t.Errorf("the re-send's first event is %#v, want task %s working", events[0], taskID)
			}
			last, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
			if !ok || last.TaskID != taskID || last.Status.State != a2a.TaskStateCompleted {
				t.Errorf("the re-send's last event is %#v, want task %s completed", events[len(events)-1], taskID)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// TaskReader answers the middleware's replays from the task store, so a retry is
// answered without a GetTask round trip, with the task the store holds.
func TestTaskReaderServesReplays(t *testing.T) {
	agent := &testkit.Agent{}
	index := memstore.New(memstore.Options{})
	var tasks *adapter.TaskReader
	var reads atomic.Int64
	mw, err := middleware.New(index, middleware.Options{Tasks: readerFunc(func(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error) {
		reads.Add(1)
		return tasks.ReadTask(ctx, r, tenant, taskID)
	})})
	if err != nil {
		t.Fatal(err)
	}
	srv := testkit.NewServer(t, testkit.Config{Executor: adapter.NewExecutor(agent, adapter.Options{}), Wrap: mw})
	tasks = adapter.NewTaskReader(srv.Store, adapter.TaskReaderOptions{})
	c := client(t, srv.Card, a2a.TransportProtocolJSONRPC)
	msg, _ := keyedMessage(t, "read me")

	res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	want, got := res.(*a2a.Task), again.(*a2a.Task)
	if got.ID != want.ID || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 {
		t.Errorf("replay through TaskReader returned %#v, want %#v", got, want)
	}
	if n := agent.Runs(); n != 1 {
		t.Errorf("agent ran %d times, want 1", n)
	}
	if n := reads.Load(); n == 0 {
		t.Error("the replay did not read the task through TaskReader")
	}
}

type readerFunc func(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error)

func (f readerFunc) ReadTask(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error) {
	return f(ctx, r, tenant, taskID)
}

// A keyed follow-up that a2a-go refuses (its task does not exist, or has finished)
// holds no key: nothing ran, so the key is released and the scope does not fill up
// with keys of refused sends.
func TestRefusedFollowUpHoldsNoKey(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := memstore.New(memstore.Options{})
			agent := &testkit.Agent{}
			srv := keyedServer(t, agent, index, middleware.Options{})
			c := client(t, srv.Card, binding)
			done, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("finish")),
			})
			if err != nil {
				t.Fatal(err)
			}
			for name, task := range map[string]*a2a.Task{
				"unknown task":  {ID: "no-such-task", ContextID: "ctx"},
				"finished task": done.(*a2a.Task),
			} {
				msg, key := followUp(t, task, "more")
				if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err == nil {
					t.Errorf("%s: a2a-go accepted the follow-up", name)
				}
				if rec, held, err := index.Lookup(context.Background(), "", key); err != nil || held {
					t.Errorf("%s: after the refusal the key holds %+v (held=%v, err %v), want it released", name, rec, held, err)
				}
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}
		})
	}
}

// A keyed message that reaches the adapter without the middleware's claim (sent
// through a binding the middleware does not see, such as gRPC, here a server without
// the middleware) is refused as unsupported, new sends and follow-ups alike: it is
// not run without deduplication. The task of a refused follow-up is left as it was.
func TestUnclaimedKeyedSendRefused(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent := &testkit.Agent{AskFirst: true}
			store := testkit.NewStore()
			srv := testkit.NewServer(t, testkit.Config{Agent: agent, Executor: adapter.NewExecutor(agent, adapter.Options{}),
				HandlerOptions: []a2asrv.RequestHandlerOption{a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, adapter.Options{}))},
				TaskStore:      store,
			})
			c := client(t, srv.Card, binding)
			msg, _ := keyedMessage(t, "no middleware")
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("unclaimed keyed send: error %v, want UnsupportedOperation", err)
			}
			task := newTaskAwaitingInput(t, c)
			more, _ := followUp(t, task, "more")
			_, err = c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: more})
			if !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Errorf("unclaimed keyed follow-up: error %v, want UnsupportedOperation", err)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1 (the unkeyed send only)", n)
			}
			if stored := srv.Task(t, task.ID); stored.Status.State != a2a.TaskStateInputRequired || len(stored.History) != len(task.History) {
				t.Errorf("after the refused follow-up the task is %s with %d messages, want it unchanged", stored.Status.State, len(stored.History))
			}
		})
	}
}

// Without FollowUpBinder, the Executor refuses an unclaimed keyed first send itself;
// with Options.RunUnclaimed (a2a-go's cluster mode, where the claim cannot reach the
// executor) it runs it and logs a warning.
func TestExecutorUnclaimedKeyedSend(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	for _, run := range []bool{false, true} {
		agent := &testkit.Agent{}
		srv := testkit.NewServer(t, testkit.Config{Agent: agent, Executor: adapter.NewExecutor(agent, adapter.Options{RunUnclaimed: run, Logger: logger})})
		msg, _ := keyedMessage(t, "no middleware")
		_, err := client(t, srv.Card, a2a.TransportProtocolJSONRPC).SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		switch {
		case !run && (err == nil || agent.Runs() != 0):
			t.Errorf("unclaimed keyed send: error %v, agent ran %d times; want a refusal and no run", err, agent.Runs())
		case run && (err != nil || agent.Runs() != 1):
			t.Errorf("unclaimed keyed send with RunUnclaimed: error %v, agent ran %d times; want one run", err, agent.Runs())
		}
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("no warning logged for the unclaimed keyed sends:\n%s", logs.String())
	}
}
