// Package readme holds the Go snippets of the repository's README.md as code that
// compiles and runs, and a test that the README still shows them exactly as they are
// here, so that the README cannot drift from the kit's API.
package readme

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// README snippet: wrap
func newServer(agent a2asrv.AgentExecutor, card *a2a.AgentCard) (http.Handler, error) {
	// Was: a2asrv.NewHandler(agent). The adapter binds each key to its task once the task is stored.
	tasks := adapter.NewBindingStore(taskstore.NewInMemory(nil), adapter.Options{})
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, adapter.Options{}), a2asrv.WithTaskStore(tasks),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, adapter.Options{})))
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))

	idem, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		return nil, err
	}
	return idem(mux), nil // serve this where you served mux
}

// README snippet end

// echoAgent completes a task that echoes the message, and counts its runs.
type echoAgent struct{ runs atomic.Int64 }

func (a *echoAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.runs.Add(1)
		if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
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

// The README's server wrapped by the kit: a keyed message sent twice, on each
// binding, runs the agent once per binding, and both answers name the same task.
func Example_wrap() {
	agent := &echoAgent{}
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	card := &a2a.AgentCard{Name: "echo", SupportedInterfaces: []*a2a.AgentInterface{
		a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON),
	}}
	h, err := newServer(agent, card)
	if err != nil {
		log.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()

	ctx := context.Background()
	for _, iface := range card.SupportedInterfaces {
		client, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface})
		if err != nil {
			log.Fatal(err)
		}
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
		if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
			log.Fatal(err)
		}
		runs := agent.runs.Load()
		first, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			log.Fatal(err)
		}
		retry, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: same task %v, agent ran %d time(s)\n", iface.ProtocolBinding,
			first.(*a2a.Task).ID == retry.(*a2a.Task).ID, agent.runs.Load()-runs)
	}
	// Output:
	// JSONRPC: same task true, agent ran 1 time(s)
	// HTTP+JSON: same task true, agent ran 1 time(s)
}

// README snippet: conformance
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
		return newMyIndex(t) // a fresh index for each check; register teardown with t.Cleanup
	})
}

// README snippet end

// newMyIndex stands for the custom index of the README's snippet.
func newMyIndex(t *testing.T) idempotency.KeyIndex {
	return memstore.New(memstore.Options{})
}

// TestREADME checks that README.md shows each snippet of this file, byte for byte, in
// a Go code block.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	snippets := 0
	for rest := src; ; {
		_, after, ok := bytes.Cut(rest, []byte("\n// README snippet: "))
		if !ok {
			break
		}
		name, body, _ := bytes.Cut(after, []byte("\n"))
		snippet, next, ok := bytes.Cut(body, []byte("\n// README snippet end\n"))
		if !ok {
			t.Fatalf("snippet %s has no end marker", name)
		}
		rest = next
		snippets++
		block := "```go\n" + strings.TrimSpace(string(snippet)) + "\n```\n"
		if !bytes.Contains(readme, []byte(block)) {
			t.Errorf("README.md does not show snippet %s as it is in readme_test.go:\n%s", name, block)
		}
	}
	if snippets != 2 {
		t.Errorf("found %d snippets in readme_test.go, want 2", snippets)
	}
}
