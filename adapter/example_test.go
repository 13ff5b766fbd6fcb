package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// echoAgent completes a task that echoes the message, and counts its runs.
type echoAgent struct{ runs atomic.Int64 }

func (a *echoAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.runs.Add(1)
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+ec.Message.Parts[0].Text())), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *echoAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// An a2a-go server with the kit: the middleware in front of the transports claims
// keys, the Executor holds each claim while the agent runs, the BindingStore binds
// the key once its task is stored, and the FollowUpBinder binds follow-ups. A keyed message sent twice runs the agent once, and
// both answers name the same task.
func Example() {
	agent := &echoAgent{}
	tasks := adapter.NewBindingStore(taskstore.NewInMemory(nil), adapter.Options{})
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, adapter.Options{}), a2asrv.WithTaskStore(tasks),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, adapter.Options{})))
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))

	idem, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(idem(mux))
	defer srv.Close()

	ctx := context.Background()
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/jsonrpc", a2a.TransportProtocolJSONRPC)})
	if err != nil {
		log.Fatal(err)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		log.Fatal(err)
	}

	first, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		log.Fatal(err)
	}
	retry, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same task:", first.(*a2a.Task).ID == retry.(*a2a.Task).ID)
	fmt.Println("state:", retry.(*a2a.Task).Status.State)
	fmt.Println("agent runs:", agent.runs.Load())
	// Output:
	// same task: true
	// state: TASK_STATE_COMPLETED
	// agent runs: 1
}

// A client keys a message before sending it; a malformed key is refused and leaves
// the message unchanged.
func ExampleSetMessageKey() {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("book the flight"))

	if err := adapter.SetMessageKey(msg, "too-short"); err != nil {
		fmt.Println("refused:", errors.Is(err, idempotency.ErrKeyTooShort), len(msg.Metadata))
	}
	if err := adapter.SetMessageKey(msg, "0f8e7d6c5b4a39281706f5e4d3c2b1a0"); err != nil {
		log.Fatal(err)
	}
	key, ok, err := adapter.MessageKey(msg)
	fmt.Println(key, ok, err)
	fmt.Println(msg.Extensions)
	// Output:
	// refused: true 0
	// 0f8e7d6c5b4a39281706f5e4d3c2b1a0 true <nil>
	// [https://a2a-rust.com/extensions/idempotency/v1]
}

// An operator who signs the agent card declares the extension first: the middleware
// cannot add it to a signed card.
func ExampleDeclareExtension() {
	card := &a2a.AgentCard{Name: "travel agent"}
	if err := adapter.DeclareExtension(card); err != nil {
		log.Fatal(err)
	}
	if err := adapter.DeclareExtension(card); err != nil { // already declared: unchanged
		log.Fatal(err)
	}
	for _, ext := range card.Capabilities.Extensions {
		fmt.Println(ext.URI, ext.Required)
	}

	signed := &a2a.AgentCard{Name: "signed", Signatures: []a2a.AgentCardSignature{{Protected: "e30", Signature: "c2ln"}}}
	fmt.Println(adapter.DeclareExtension(signed))
	// Output:
	// https://a2a-rust.com/extensions/idempotency/v1 false
	// adapter: agent card is already signed; declare the idempotency extension before signing it
}

// A TaskReader answers retries from the task store the a2a-go handler writes to,
// instead of a GetTask round trip through the handler: set it as
// middleware.Options.Tasks. Here it reads a task straight from an in-memory store.
func ExampleNewTaskReader() {
	store := taskstore.NewInMemory(nil)
	task := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	if _, err := store.Create(context.Background(), task); err != nil {
		fmt.Println(err)
		return
	}
	tasks := adapter.NewTaskReader(store, adapter.TaskReaderOptions{})

	retry := httptest.NewRequest(http.MethodPost, "/jsonrpc", nil)
	body, err := tasks.ReadTask(context.Background(), retry, "", "task-1")
	fmt.Println(string(body), err)
	_, err = tasks.ReadTask(context.Background(), retry, "", "task-2")
	fmt.Println(errors.Is(err, middleware.ErrTaskNotFound))

	// The middleware answers retries of a bound key from it:
	_ = middleware.Options{Tasks: tasks}
	// Output:
	// {"id":"task-1","contextId":"ctx-1","status":{"state":"TASK_STATE_COMPLETED"}} <nil>
	// true
}
