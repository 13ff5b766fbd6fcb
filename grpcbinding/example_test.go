package grpcbinding_test

import (
	"context"
	"fmt"
	"iter"
	"log"
	"net"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/grpcbinding"
	"github.com/a2akit/idempotency/memstore"
)

// echo is an agent that answers every send with a Message and counts its runs.
type echo struct{ runs atomic.Int64 }

func (e *echo) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		e.runs.Add(1)
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("echo: "+ec.Message.Parts[0].Text())), nil)
	}
}

func (e *echo) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {}
}

// An a2a-go gRPC server with the kit's interceptors, and a client that sends the same
// keyed message twice: the agent runs once, and the retry gets the same reply.
func Example() {
	agent := &echo{}
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, adapter.Options{}))

	kit, err := grpcbinding.New(memstore.New(memstore.Options{}), grpcbinding.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer(kit.ServerOptions()...)
	a2agrpc.NewHandler(handler).RegisterWith(srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	// The client keys its sends itself and retries them after ambiguous failures.
	ctx := context.Background()
	kopts := keyedclient.Options{PeerHonoursKeys: true}
	client, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(lis.Addr().String(), a2a.TransportProtocolGRPC)},
		grpcbinding.WithKeyedTransport(kopts, grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Destroy()

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.(*a2a.Message).Parts[0].Text())
	}
	fmt.Println("agent runs:", agent.runs.Load())
	// Output:
	// echo: hello
	// echo: hello
	// agent runs: 1
}
