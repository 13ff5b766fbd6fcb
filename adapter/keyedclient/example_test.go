package keyedclient_test

import (
	"context"
	"fmt"
	"iter"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

type doneAgent struct{}

func (doneAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		task := a2a.NewSubmittedTask(ec, ec.Message)
		task.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted}
		yield(task, nil)
	}
}

func (doneAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {}
}

// A client built with FactoryOptions keys every send to a server whose card declares
// the extension (the kit's middleware declares it on the card it serves), and would
// retry it after an ambiguous failure with the same key and message.
func Example() {
	// A server with the kit in front of it.
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	card := &a2a.AgentCard{
		Name:                "done",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC)},
	}
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(adapter.NewExecutor(doneAgent{}, adapter.Options{}))))
	idem, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv.Config.Handler = idem(mux)
	srv.Start()
	defer srv.Close()

	// The client.
	ctx := context.Background()
	served, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		log.Fatal(err)
	}
	client, err := a2aclient.NewFromCard(ctx, served, keyedclient.FactoryOptions(keyedclient.Options{
		Retry: keyedclient.RetryPolicy{MaxAttempts: 5, MaxDelay: 10 * time.Second},
	})...)
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
	})
	if err != nil {
		log.Fatal(err)
	}
	task := res.(*a2a.Task)
	_, keyed, err := adapter.MessageKey(task.History[0])
	fmt.Println(task.Status.State, "keyed:", keyed, err)
	// Output:
	// TASK_STATE_COMPLETED keyed: true <nil>
}
