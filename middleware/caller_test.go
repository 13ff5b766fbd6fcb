package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// userHeader names the caller in these tests; a bearer token would stand there in
// production, read by the same kind of interceptor.
const userHeader = "X-Test-User"

// asUser is a transport that sends every request as user.
type asUser struct {
	user string
	base http.RoundTripper
}

func (t asUser) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(userHeader, t.user)
	return t.base.RoundTrip(r)
}

// ownedServer runs a real a2a-go server that authenticates callers (headerAuth) and
// keeps each task for its owner (a2a-go's task store authenticator), behind the
// middleware with opts, and returns its URL.
func ownedServer(t *testing.T, agent *testkit.Agent, withAdapter bool, opts middleware.Options) string {
	t.Helper()
	var store taskstore.Store = taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})
	var exec a2asrv.AgentExecutor = agent
	if withAdapter { // the adapter binds the key before the agent runs
		exec = adapter.NewExecutor(agent, adapter.Options{Logger: mwtest.DiscardLogger()})
		store = adapter.NewBindingStore(store, adapter.Options{Logger: mwtest.DiscardLogger()})
	}
	rh := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(store), a2asrv.WithCallInterceptors(testkit.UserAuth(userHeader)),
		a2asrv.WithLogger(mwtest.DiscardLogger()))
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	if opts.Logger == nil {
		opts.Logger = mwtest.DiscardLogger()
	}
	mw, err := middleware.New(memstore.New(memstore.Options{}), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(mux))
	t.Cleanup(srv.Close)
	return srv.URL
}

// clientAs returns an a2a-go client of binding ("JSONRPC" or "HTTP+JSON") at base,
// sending as user.
func clientAs(t *testing.T, base, binding, user string) *a2aclient.Client {
	t.Helper()
	iface := a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC)
	if binding != "JSONRPC" {
		iface = a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON)
	}
	hc := &http.Client{Transport: asUser{user: user, base: http.DefaultTransport}}
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answerOf names what a send's events came to: the task id or the Message reply's
// text.
func answerOf(t *testing.T, evs []a2a.Event) string {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	if m, ok := evs[0].(*a2a.Message); ok {
		return "message " + m.Parts[0].Text()
	}
	return "task " + string(mwtest.TaskOf(evs[0]))
}

// TestCallersOwnTheirKeys: with Options.Principal bound to the server's own
// authentication (adapter.Principal), a second caller who sends the first caller's
// key and message again gets "already held", never the first caller's task, stream or
// Message reply, on both HTTP bindings; the first caller's own retry is replayed, and
// the agent ran once.
func TestCallersOwnTheirKeys(t *testing.T) {
	for _, withAdapter := range []bool{false, true} {
		for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
			for _, streaming := range []bool{false, true} {
				for _, word := range []string{"echo", "reply"} {
					name := fmt.Sprintf("%s/%s/stream=%v/adapter=%v", binding, word, streaming, withAdapter)
					t.Run(name, func(t *testing.T) {
						ownKeys(t, withAdapter, binding, streaming, word)
					})
				}
			}
		}
	}
}

// ownKeys is one case of TestCallersOwnTheirKeys.
func ownKeys(t *testing.T, withAdapter bool, binding string, streaming bool, word string) {
	agent := &testkit.Agent{ReplyPrefix: "reply"}
	base := ownedServer(t, agent, withAdapter, middleware.Options{Principal: adapter.Principal(testkit.UserAuth(userHeader))})
	alice, mallory := clientAs(t, base, binding, "alice"), clientAs(t, base, binding, "mallory")
	msg := mwtest.KeyedMessage(t, idempotency.NewKey(), word+" secret of alice")
	req := &a2a.SendMessageRequest{Message: msg}
	ctx := context.Background()

	first, err := mwtest.Send(ctx, alice, streaming, req)
	if err != nil {
		t.Fatalf("alice's send: %v", err)
	}
	want := answerOf(t, first)
	if evs, err := mwtest.Send(ctx, mallory, streaming, req); err == nil || !strings.Contains(err.Error(), "already held") {
		t.Fatalf("mallory's retry of alice's key: %v, %v; want the already-held refusal", evs, err)
	} else if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), string(msg.ID)) {
		t.Fatalf("the refusal discloses the first send: %v", err)
	}
	again, err := mwtest.Send(ctx, alice, streaming, req)
	if err != nil {
		t.Fatalf("alice's retry: %v", err)
	}
	if got := answerOf(t, again); got != want {
		t.Fatalf("alice's retry answered %s, want %s", got, want)
	}
	if n := agent.RunsOf(msg.ID); n != 1 {
		t.Fatalf("the agent ran %d times, want 1", n)
	}
}

// TestPrincipalRefusesAnonymousKeyedSends: when keys are bound to callers, a keyed
// send that names none is refused before anything runs; an unkeyed one runs.
func TestPrincipalRefusesAnonymousKeyedSends(t *testing.T) {
	agent := &testkit.Agent{}
	base := ownedServer(t, agent, false, middleware.Options{Principal: middleware.PrincipalHeader(userHeader)})
	anon := clientAs(t, base, "JSONRPC", "")
	ctx := context.Background()
	_, err := mwtest.Send(ctx, anon, false, &a2a.SendMessageRequest{Message: mwtest.KeyedMessage(t, idempotency.NewKey(), "echo")})
	if err == nil || !strings.Contains(err.Error(), userHeader) {
		t.Fatalf("anonymous keyed send: %v; want a refusal naming %s", err, userHeader)
	}
	if _, err := mwtest.Send(ctx, anon, false, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo"))}); err != nil {
		t.Fatalf("anonymous unkeyed send: %v", err)
	}
	if n := agent.Runs(); n != 1 {
		t.Fatalf("the agent ran %d times, want 1 (the unkeyed send)", n)
	}
}
