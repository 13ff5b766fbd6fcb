package grpcbinding

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// holdFirst returns the kit's agent made to wait at hold before its first event, so
// that the task is not stored yet while it waits.
func holdFirst(hold chan struct{}) *testkit.Agent {
	return &testkit.Agent{Script: func(ctx context.Context, _ *a2asrv.ExecutorContext, _ string, _ int64) (a2a.Event, error) {
		select {
		case <-hold:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// serverConfig configures startServer. The zero value serves the kit's agent over gRPC
// and HTTP with no idempotency at all.
type serverConfig struct {
	agent *testkit.Agent
	// index is the kit's index; default a fresh memstore.
	index idempotency.KeyIndex
	// grpcOptions are passed to grpc.NewServer, before the kit's interceptors.
	grpcOptions []grpc.ServerOption
	// keyed puts the kit in front of both: the gRPC interceptors of New(index, opts),
	// last in the chains, and the HTTP middleware on the same index.
	keyed bool
	opts  Options
	// noIndex makes the kit's index nil: it cannot honour keys.
	noIndex bool
	// noAdapter serves the agent without the adapter, as a server the kit cannot see
	// inside.
	noAdapter bool
	// readStore sets opts.Tasks to an adapter.TaskReader over the handler's store.
	readStore bool
	// interceptors are a2a-go call interceptors of the handler (its authorization).
	interceptors []a2asrv.CallInterceptor
	// card, when set, is the public card (served over HTTP, through the middleware)
	// and the extended card of every binding.
	card *a2a.AgentCard
}

// server is one a2a-go request handler served over gRPC (a2agrpc, on a TCP loopback
// listener) and over JSON-RPC (/jsonrpc) and HTTP+JSON (/rest).
type server struct {
	grpcAddr string
	httpURL  string
	agent    *testkit.Agent
	index    idempotency.KeyIndex
	store    taskstore.Store
	// markers checks the answers of the sends of client and raw (markerOptions).
	markers *wireclient.MarkerRule
}

func startServer(t testing.TB, cfg serverConfig) *server {
	t.Helper()
	if cfg.agent == nil {
		cfg.agent = &testkit.Agent{}
	}
	if cfg.index == nil {
		cfg.index = newIndex()
	}
	var store taskstore.Store = taskstore.NewInMemory(nil)
	var handler a2asrv.RequestHandler
	var cardOptions []a2asrv.RequestHandlerOption
	if cfg.card != nil {
		cardOptions = append(cardOptions, a2asrv.WithExtendedAgentCard(cfg.card))
	}
	if cfg.noAdapter {
		handler = a2asrv.NewHandler(cfg.agent, append(cardOptions, a2asrv.WithTaskStore(store))...)
	} else {
		store = adapter.NewBindingStore(store, adapter.Options{})
		handler = a2asrv.NewHandler(adapter.NewExecutor(cfg.agent, adapter.Options{}), append(cardOptions,
			a2asrv.WithTaskStore(store),
			a2asrv.WithCallInterceptors(append(cfg.interceptors, adapter.NewFollowUpBinder(store, adapter.Options{}))...))...)
	}
	if cfg.readStore {
		cfg.opts.Tasks = adapter.NewTaskReader(store, adapter.TaskReaderOptions{})
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	// The card lists the HTTP+JSON mount, so that the middleware's default tenant
	// routes put /rest/message:send in the body's tenant's scope, as gRPC's.
	card := cfg.card
	if card == nil {
		card = &a2a.AgentCard{Name: "echo",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface("http://localhost/rest", a2a.TransportProtocolHTTPJSON)}}
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	var h http.Handler = mux
	grpcOptions := cfg.grpcOptions
	if cfg.keyed {
		index := cfg.index
		if cfg.noIndex {
			index = nil
		}
		kit, err := New(index, cfg.opts)
		if err != nil {
			t.Fatal(err)
		}
		grpcOptions = append(grpcOptions, kit.ServerOptions()...)
		idem, err := middleware.New(index, middleware.Options{Lease: cfg.opts.Lease, ReplayWait: cfg.opts.ReplayWait,
			CheckContent: cfg.opts.CheckContent})
		if err != nil {
			t.Fatal(err)
		}
		h = idem(mux)
	}
	gs := grpc.NewServer(grpcOptions...)
	a2agrpc.NewHandler(handler).RegisterWith(gs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	return &server{grpcAddr: lis.Addr().String(), httpURL: hs.URL, agent: cfg.agent, index: cfg.index, store: store,
		markers: wireclient.MarkerRuleOf(t)}
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
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, markerOptions(s.markers)...)
	opts = append([]a2aclient.FactoryOption{a2agrpc.WithGRPCTransport(dial...)}, opts...)
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

// raw returns a client of the generated gRPC service of s, for what a2a-go's client
// does not show: status details and response metadata.
func (s *server) raw(t testing.TB) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.grpcAddr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, markerOptions(s.markers)...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// rawRequest returns the proto of req.
func rawRequest(t testing.TB, req *a2a.SendMessageRequest) *a2apb.SendMessageRequest {
	t.Helper()
	pb, err := pbconv.ToProtoSendMessageRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

// grpcError is what a test checks of a gRPC error.
type grpcError struct {
	code       codes.Code
	message    string
	info       *errdetails.ErrorInfo // the last, as a2a-go's gRPC client reads it
	kitReason  string                // of the ErrorInfo in middleware.ReasonDomain
	retryDelay time.Duration         // of a RetryInfo detail; -1 when there is none
}

func statusOf(t testing.TB, err error) grpcError {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("error %v is not a gRPC status", err)
	}
	g := grpcError{code: st.Code(), message: st.Message(), retryDelay: -1}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			g.info = d
			if d.GetDomain() == middleware.ReasonDomain {
				g.kitReason = d.GetReason()
			}
		case *errdetails.RetryInfo:
			g.retryDelay = d.GetRetryDelay().AsDuration()
		}
	}
	return g
}

// wantStatus checks that err is the gRPC status code with an ErrorInfo of reason in
// A2A's domain, and a message that contains text.
func wantStatus(t testing.TB, err error, code codes.Code, reason, text string) grpcError {
	t.Helper()
	g := statusOf(t, err)
	if g.code != code {
		t.Fatalf("status %v (%s), want %v", g.code, g.message, code)
	}
	if g.info == nil || g.info.GetReason() != reason || g.info.GetDomain() != "a2a-protocol.org" {
		t.Fatalf("ErrorInfo %v, want reason %s in domain a2a-protocol.org", g.info, reason)
	}
	if !strings.Contains(g.message, text) {
		t.Fatalf("message %q does not contain %q", g.message, text)
	}
	return g
}

func newIndex() idempotency.KeyIndex { return memstore.New(memstore.Options{}) }
