package keyedclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// fast retries quickly, so that the tests do not wait out real backoffs.
var fast = keyedclient.RetryPolicy{MaxAttempts: 3, InitialDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// keyedServer is an a2a-go server for agent with the adapter's hooks, behind the kit's
// middleware claiming keys in index.
func keyedServer(t *testing.T, agent a2asrv.AgentExecutor, index idempotency.KeyIndex, opts middleware.Options) *testkit.Running {
	t.Helper()
	mw, err := middleware.New(index, opts)
	if err != nil {
		t.Fatal(err)
	}
	store := testkit.NewStore()
	return testkit.NewServer(t, testkit.Config{Executor: adapter.NewExecutor(agent, adapter.Options{}),
		Wrap:           mw,
		HandlerOptions: []a2asrv.RequestHandlerOption{a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, adapter.Options{}))},
		TaskStore:      store,
	})
}

// keyedClient resolves the card at baseURL and returns a client of its binding that
// sends through keyedclient.
func keyedClient(t *testing.T, baseURL string, binding a2a.TransportProtocol, opts keyedclient.Options) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), baseURL)
	if err != nil {
		t.Fatal(err)
	}
	factoryOpts := append([]a2aclient.FactoryOption{
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}),
	}, keyedclient.FactoryOptions(opts)...)
	c, err := a2aclient.NewFromCard(context.Background(), card, factoryOpts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// proxied starts an agent behind keyedServer over a memstore, a testkit.Proxy in front
// of it losing the answers lose picks, and a keyed client of binding through the
// proxy retrying fast.
func proxied(t *testing.T, binding a2a.TransportProtocol, lose func(n int) bool) (*testkit.Agent, *testkit.Proxy, *a2aclient.Client) {
	t.Helper()
	agent := &testkit.Agent{}
	srv := keyedServer(t, agent, memstore.New(memstore.Options{}), middleware.Options{})
	proxy := testkit.NewProxy(t, srv.URL, lose)
	return agent, proxy, keyedClient(t, proxy.URL, binding, keyedclient.Options{Retry: fast})
}

// loseFirst loses the answer to the first request.
func loseFirst(n int) bool { return n == 1 }

var bindings = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON}

func send(c *a2aclient.Client, msg *a2a.Message) (a2a.SendMessageResult, error) {
	return c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
}

// completedOnce fails t unless res is a completed task and the agent ran once; it
// returns the task.
func completedOnce(t *testing.T, res a2a.SendMessageResult, agent *testkit.Agent) *a2a.Task {
	t.Helper()
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("keyed send returned %#v, want a completed task", res)
	}
	if n := agent.Runs(); n != 1 {
		t.Errorf("agent ran %d times, want 1", n)
	}
	return task
}

// The proxy forwards the first send and drops the connection instead of answering.
// The client, which learned from the card that the server honours keys, keys the send
// itself and retries it: the agent runs once and the caller gets the task.
func TestDroppedResponseRetriedWithSameKey(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent, proxy, c := proxied(t, binding, loseFirst)

			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("once"))
			res, err := send(c, msg)
			if err != nil {
				t.Fatalf("keyed send through a dropping proxy: %v", err)
			}
			task := completedOnce(t, res, agent)
			if n := proxy.Posts(); n != 2 {
				t.Errorf("%d sends reached the proxy, want 2 (the lost one and its retry)", n)
			}
			if _, has, _ := adapter.MessageKey(msg); has {
				t.Error("the caller's message was given a key; the key belongs on a copy")
			}
			if _, has, err := adapter.MessageKey(task.History[0]); err != nil || !has {
				t.Errorf("the task's first message carries no key (err %v); the send was not keyed", err)
			}
		})
	}
}

// Against a server whose card does not declare the extension, the client neither
// keys nor retries the send: the caller gets the error of the lost response.
func TestNoRetryWithoutExtensionInCard(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent := &testkit.Agent{}
			srv := testkit.NewServer(t, testkit.Config{Executor: agent})
			proxy := testkit.NewProxy(t, srv.URL, loseFirst)
			c := keyedClient(t, proxy.URL, binding, keyedclient.Options{Retry: fast})

			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("once"))
			if _, err := send(c, msg); err == nil {
				t.Fatal("send through a dropping proxy returned no error")
			}
			if n := proxy.Posts(); n != 1 {
				t.Errorf("%d sends reached the proxy, want 1 (no retry)", n)
			}
			if n := agent.Runs(); n != 1 {
				t.Errorf("agent ran %d times, want 1", n)
			}

			// The next send goes through; the task shows the message went unkeyed.
			res, err := send(c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("twice")))
			if err != nil {
				t.Fatal(err)
			}
			if _, has, _ := adapter.MessageKey(res.(*a2a.Task).History[0]); has {
				t.Error("a key was attached for a peer that does not declare the extension")
			}
		})
	}
}

// A keyed send that the caller keyed itself, against a peer without the extension: it
// is passed on untouched and not retried.
func TestCallerKeyedSendNotRetriedWithoutExtension(t *testing.T) {
	agent := &testkit.Agent{}
	srv := testkit.NewServer(t, testkit.Config{Executor: agent})
	proxy := testkit.NewProxy(t, srv.URL, loseFirst)
	c := keyedClient(t, proxy.URL, a2a.TransportProtocolJSONRPC, keyedclient.Options{Retry: fast})

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("mine"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	if _, err := send(c, msg); err == nil {
		t.Fatal("send through a dropping proxy returned no error")
	}
	if n := proxy.Posts(); n != 1 {
		t.Errorf("%d sends reached the proxy, want 1 (no retry)", n)
	}
}

// A client created from endpoints has no card; the caller asserts that the peer
// honours keys, and the send is keyed and retried.
func TestAssertedPeerRetried(t *testing.T) {
	agent := &testkit.Agent{}
	srv := keyedServer(t, agent, memstore.New(memstore.Options{}), middleware.Options{})
	proxy := testkit.NewProxy(t, srv.URL, loseFirst)
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(proxy.URL+"/jsonrpc", a2a.TransportProtocolJSONRPC)},
		keyedclient.FactoryOptions(keyedclient.Options{PeerHonoursKeys: true, Retry: fast})...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := send(c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("asserted")))
	if err != nil {
		t.Fatalf("keyed send through a dropping proxy: %v", err)
	}
	completedOnce(t, res, agent)
}

// A refusal is not retried: the same key on a different message is refused with
// invalid params, once.
func TestRefusalNotRetried(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			_, proxy, c := proxied(t, binding, func(int) bool { return false })

			key := idempotency.NewKey()
			first := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("first"))
			second := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("second"))
			for _, m := range []*a2a.Message{first, second} {
				if err := adapter.SetMessageKey(m, key); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := send(c, first); err != nil {
				t.Fatal(err)
			}
			_, err := send(c, second)
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Errorf("send reusing a key: error %v, want invalid params", err)
			}
			if n := proxy.Posts(); n != 2 {
				t.Errorf("%d sends reached the proxy, want 2 (the refusal is not retried)", n)
			}
		})
	}
}

// The index is unavailable for the first attempt: the middleware answers 503 with
// Retry-After, and the client retries, the agent running once.
func TestUnavailableIndexRetried(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			index := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			agent := &testkit.Agent{}
			srv := keyedServer(t, agent, index, middleware.Options{})
			c := keyedClient(t, srv.URL, binding, keyedclient.Options{Retry: fast})

			index.FailNext(testkit.OpClaim, 1)
			res, err := send(c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("later")))
			if err != nil {
				t.Fatalf("keyed send against a briefly unavailable index: %v", err)
			}
			completedOnce(t, res, agent)
		})
	}
}

// While the first attempt of a send is in flight and its task is not known (no adapter
// binds it early, and the middleware does not forward it as a stream to bind it
// early), the middleware answers a retry 409 with Retry-After. The client retries
// that, gives up after its attempts with an error that says so, and a later send of
// the same message gets the task.
func TestInFlightConflictRetriedThenGivenUp(t *testing.T) {
	agent := &testkit.Agent{Hold: make(chan struct{}), Started: make(chan a2a.TaskID, 1)}
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{ReplayWait: time.Millisecond,
		EarlyBind: middleware.EarlyBindOff})
	if err != nil {
		t.Fatal(err)
	}
	srv := testkit.NewServer(t, testkit.Config{Executor: agent, Wrap: mw})
	proxy := testkit.NewProxy(t, srv.URL, func(int) bool { return false })
	c := keyedClient(t, proxy.URL, a2a.TransportProtocolJSONRPC, keyedclient.Options{Retry: fast})

	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := send(c, msg)
		first <- err
	}()
	<-agent.Started

	posts := proxy.Posts()
	_, err = send(c, msg)
	var status *keyedclient.StatusError
	if !errors.As(err, &status) || status.StatusCode != http.StatusConflict || status.RetryAfter <= 0 {
		t.Fatalf("retry while the first attempt runs: error %v, want a 409 with Retry-After", err)
	}
	if n := proxy.Posts() - posts; n != fast.MaxAttempts {
		t.Errorf("the retried send made %d attempts, want %d", n, fast.MaxAttempts)
	}

	close(agent.Hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	res, err := send(c, msg)
	if err != nil {
		t.Fatal(err)
	}
	completedOnce(t, res, agent)
}

// A streaming send whose connection drops after its first event: the client re-sends
// with the same key and re-attaches to the task; the stream goes on with the task's
// current state, and the agent runs once.
func TestStreamDroppedAfterFirstEventReattaches(t *testing.T) {
	for _, binding := range bindings {
		t.Run(string(binding), func(t *testing.T) {
			agent, proxy, c := proxied(t, binding, loseFirst)

			var events []a2a.Event
			for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("stream")),
			}) {
				if err != nil {
					t.Fatalf("keyed stream through a dropping proxy: %v", err)
				}
				events = append(events, ev)
			}
			if len(events) < 2 {
				t.Fatalf("got %d events, want the first attempt's and the re-send's", len(events))
			}
			first, ok := events[0].(*a2a.Task)
			if !ok {
				t.Fatalf("first event %#v, want the task", events[0])
			}
			// The re-send starts with the task's current state; its live events follow.
			var resent *a2a.Task
			state := first.Status.State
			for _, ev := range events[1:] {
				switch ev := ev.(type) {
				case *a2a.Task:
					if resent == nil {
						resent = ev
					}
					state = ev.Status.State
				case *a2a.TaskStatusUpdateEvent:
					state = ev.Status.State
				}
			}
			if resent == nil || resent.ID != first.ID {
				t.Errorf("the re-send did not re-attach to task %s: events %#v", first.ID, events)
			}
			if state != a2a.TaskStateCompleted {
				t.Errorf("the stream ended with the task %s, want %s", state, a2a.TaskStateCompleted)
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

// RoundTripper reports the statuses worth retrying, with Retry-After, only for the
// keyed sends that Transport retries; any other request's response passes untouched.
func TestRoundTripperStatuses(t *testing.T) {
	var status atomic.Int64
	var retryAfter atomic.Value
	retryAfter.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := retryAfter.Load().(string); v != "" {
			w.Header().Set("Retry-After", v)
		}
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(srv.Close)

	// Each case is sent twice: as a request of another call (passed through) and as a
	// keyed send's attempt, through a Transport whose inner transport is JSON-RPC.
	cases := []struct {
		status     int
		retryAfter string
		want       time.Duration // -1: passed through
	}{
		{http.StatusServiceUnavailable, "2", 2 * time.Second},
		{http.StatusServiceUnavailable, "", 0},
		{http.StatusTooManyRequests, "1", time.Second},
		{http.StatusBadGateway, "", 0},
		{http.StatusGatewayTimeout, "", 0},
		{http.StatusConflict, "3", 3 * time.Second},
		{http.StatusConflict, "", -1},
		{http.StatusInternalServerError, "", -1},
		{http.StatusBadRequest, "1", -1},
	}
	hc := &http.Client{Transport: keyedclient.NewRoundTripper(nil)}
	for _, tc := range cases {
		status.Store(int64(tc.status))
		retryAfter.Store(tc.retryAfter)

		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatalf("%d: plain request: %v", tc.status, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%d: plain request got %d", tc.status, resp.StatusCode)
		}

		tr := keyedclient.NewTransport(a2aclient.NewJSONRPCTransport(srv.URL, hc), nil,
			keyedclient.Options{PeerHonoursKeys: true, Retry: keyedclient.RetryPolicy{MaxAttempts: 1}})
		_, err = tr.SendMessage(context.Background(), nil, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x")),
		})
		var se *keyedclient.StatusError
		isStatus := errors.As(err, &se)
		switch {
		case tc.want < 0 && isStatus:
			t.Errorf("%d Retry-After %q: got %v, want the status passed through", tc.status, tc.retryAfter, err)
		case tc.want >= 0 && (!isStatus || se.StatusCode != tc.status || se.RetryAfter != tc.want):
			t.Errorf("%d Retry-After %q: got %v, want a StatusError with Retry-After %v", tc.status, tc.retryAfter, err, tc.want)
		}
	}
}

// Answers that retrying cannot change are not retried: refusals (JSON-RPC -32602,
// HTTP 400, 413), and statuses that ask the client to wait longer than the policy
// ever waits (a full scope's 429 with Retry-After of an hour). The control, a 503
// without Retry-After, is retried until the attempts run out.
func TestPermanentAnswersNotRetried(t *testing.T) {
	type answer struct {
		status     int
		retryAfter string
		body       string
	}
	const invalidRPC = `{"jsonrpc":"2.0","id":"1","error":{"code":-32602,"message":"tenant too long"}}`
	const invalidREST = `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"tenant too long","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INVALID_REQUEST","domain":"a2a-protocol.org"}]}}`
	const exhausted = `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"the scope is full"}}`
	cases := []struct {
		name    string
		binding a2a.TransportProtocol
		answer  answer
		posts   int64
	}{
		{"JSON-RPC -32602", a2a.TransportProtocolJSONRPC, answer{200, "", invalidRPC}, 1},
		{"HTTP+JSON 400", a2a.TransportProtocolHTTPJSON, answer{400, "", invalidREST}, 1},
		{"JSON-RPC 400", a2a.TransportProtocolJSONRPC, answer{400, "", invalidRPC}, 1},
		{"JSON-RPC 413", a2a.TransportProtocolJSONRPC, answer{413, "", invalidRPC}, 1},
		{"JSON-RPC 429, an hour", a2a.TransportProtocolJSONRPC, answer{429, "3600", exhausted}, 1},
		{"HTTP+JSON 429, an hour", a2a.TransportProtocolHTTPJSON, answer{429, "3600", exhausted}, 1},
		{"HTTP+JSON 503, an hour", a2a.TransportProtocolHTTPJSON, answer{503, "3600", exhausted}, 1},
		{"control: 503", a2a.TransportProtocolJSONRPC, answer{503, "", ""}, int64(fast.MaxAttempts)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var posts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				if tc.answer.retryAfter != "" {
					w.Header().Set("Retry-After", tc.answer.retryAfter)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.answer.status)
				_, _ = io.WriteString(w, tc.answer.body)
			}))
			t.Cleanup(srv.Close)
			hc := &http.Client{Transport: keyedclient.NewRoundTripper(nil)}
			var inner a2aclient.Transport = a2aclient.NewJSONRPCTransport(srv.URL, hc)
			if tc.binding == a2a.TransportProtocolHTTPJSON {
				u, _ := url.Parse(srv.URL)
				inner = a2aclient.NewRESTTransport(u, hc)
			}
			tr := keyedclient.NewTransport(inner, nil, keyedclient.Options{PeerHonoursKeys: true, Retry: fast})
			_, err := tr.SendMessage(context.Background(), nil, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x")),
			})
			if err == nil {
				t.Fatal("the send succeeded")
			}
			if n := posts.Load(); n != tc.posts {
				t.Errorf("%d attempts (last error %v), want %d", n, err, tc.posts)
			}
		})
	}
}
