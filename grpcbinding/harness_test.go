package grpcbinding

import (
	"context"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/memstore"
)

// testAgent is an a2asrv.AgentExecutor a test controls: it creates a task, reports it
// working, waits for hold (when set), adds an artifact and completes the task; or,
// with replyMessage, answers with a Message.
type testAgent struct {
	replyMessage bool
	// hold, when set, makes each run wait after WORKING (before the reply, for a
	// Message agent) until it receives or hold is closed.
	hold chan struct{}
	// started, when set, is called with the task id when a run starts.
	started func(ctx context.Context, taskID a2a.TaskID)

	runs atomic.Int64
}

func (a *testAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.runs.Add(1)
		if a.started != nil {
			a.started(ctx, ec.TaskID)
		}
		wait := func() bool {
			if a.hold == nil {
				return true
			}
			select {
			case <-a.hold:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if a.replyMessage && ec.StoredTask == nil {
			if !wait() {
				return
			}
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("reply"))
			reply.ContextID = ec.ContextID
			yield(reply, nil)
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) || !wait() {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo")), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *testAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// serverConfig configures startServer. The zero value serves an echo agent over gRPC
// and HTTP with no idempotency at all.
type serverConfig struct {
	agent *testAgent
	// index is the kit's index; default a fresh memstore.
	index idempotency.KeyIndex
	// grpcOptions are passed to grpc.NewServer: the kit's interceptors.
	grpcOptions []grpc.ServerOption
	// wrapHTTP, when set, wraps the HTTP handler: the kit's middleware.
	wrapHTTP func(http.Handler) http.Handler
}

// server is one a2a-go request handler served over gRPC (a2agrpc, on a TCP loopback
// listener) and over JSON-RPC (/jsonrpc) and HTTP+JSON (/rest).
type server struct {
	grpcAddr string
	httpURL  string
	agent    *testAgent
	index    idempotency.KeyIndex
	store    taskstore.Store
}

func startServer(t testing.TB, cfg serverConfig) *server {
	t.Helper()
	if cfg.agent == nil {
		cfg.agent = &testAgent{}
	}
	if cfg.index == nil {
		cfg.index = memstore.New(memstore.Options{})
	}
	store := taskstore.NewInMemory(nil)
	handler := a2asrv.NewHandler(adapter.NewExecutor(cfg.agent, adapter.Options{}),
		a2asrv.WithTaskStore(store),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(adapter.Options{})))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(cfg.grpcOptions...)
	a2agrpc.NewHandler(handler).RegisterWith(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	var h http.Handler = mux
	if cfg.wrapHTTP != nil {
		h = cfg.wrapHTTP(mux)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	return &server{grpcAddr: lis.Addr().String(), httpURL: hs.URL, agent: cfg.agent, index: cfg.index, store: store}
}

// client returns an a2a-go client of s over the binding protocol, with a2a-go's own
// transports (gRPC: a2agrpc.WithGRPCTransport) plus opts.
func (s *server) client(t testing.TB, protocol a2a.TransportProtocol, opts ...a2aclient.FactoryOption) *a2aclient.Client {
	t.Helper()
	url := s.grpcAddr
	switch protocol {
	case a2a.TransportProtocolJSONRPC:
		url = s.httpURL + "/jsonrpc"
	case a2a.TransportProtocolHTTPJSON:
		url = s.httpURL + "/rest"
	}
	opts = append([]a2aclient.FactoryOption{a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials()))}, opts...)
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, protocol)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// keyedRequest returns a send of a fresh message keyed with key.
func keyedRequest(t testing.TB, key string) *a2a.SendMessageRequest {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	if err := adapter.SetMessageKey(msg, key); err != nil {
		t.Fatal(err)
	}
	return &a2a.SendMessageRequest{Message: msg}
}
