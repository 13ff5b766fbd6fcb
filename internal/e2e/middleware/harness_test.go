package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// The harness runs a real a2a-go v2.4.0 server behind the middleware, as the wire
// reference's experiment does: the JSON-RPC handler at /jsonrpc, the HTTP+JSON
// handler under /rest, the tenant HTTP+JSON handler under /t/{tenant}, and a static
// agent card; and, over the same request handler, a2a-go's A2A v0.3 handlers
// (a2acompat/a2av0): JSON-RPC at /v03/jsonrpc, HTTP+JSON at /v1/… (its own prefix,
// at the root). Tests drive it with a2a-go's own clients over HTTP: v1.0's, and
// a2av0's v0.3 transports.

// The agent is the test kit's; the first word of the message's text chooses what it
// does:
//
//	echo   creates a task, works, adds an artifact, completes
//	reply  answers with a Message, no task
//	fail   fails before creating a task on its first run, then behaves as echo
//	block  creates a task, works, then waits for the gate (Hold) before completing
//	hold   waits for the gate before creating anything, then behaves as echo
//
// It sends the task id of each run it starts on Started (buffered).
func newAgent() *testkit.Agent {
	gate := make(chan struct{})
	return &testkit.Agent{Hold: gate, HoldPrefix: "block", Started: make(chan a2a.TaskID, 1024),
		Script: func(ctx context.Context, ec *a2asrv.ExecutorContext, text string, run int64) (a2a.Event, error) {
			word, _, _ := strings.Cut(text, " ")
			switch {
			case word == "reply":
				return replyTo(ec, text), nil
			case word == "fail" && run == 1:
				return nil, errors.New("agent failed before creating a task")
			case word == "hold":
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return nil, nil
		}}
}

// replyTo is the agent's Message reply to text.
func replyTo(ec *a2asrv.ExecutorContext, text string) *a2a.Message {
	reply := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("reply to "+text))
	if trace, ok := ec.Message.Metadata["trace"].(map[string]any); ok {
		// A reply with every kind of part, for the conversions between dialects: the
		// trace back as metadata, as object data and as list data, and a file by
		// bytes and by URL.
		raw := a2a.NewRawPart([]byte("raw \x00 bytes"))
		raw.Filename, raw.MediaType = "r.bin", "application/octet-stream"
		reply.Metadata = map[string]any{"trace": trace}
		reply.Parts = append(reply.Parts, a2a.NewDataPart(trace), a2a.NewDataPart(trace["tags"]), raw,
			a2a.NewFileURLPart("https://example.com/f.pdf", "application/pdf"))
	}
	return reply
}

// harnessConfig configures a harness; the zero value runs a memstore index.
type harnessConfig struct {
	index   idempotency.KeyIndex // nil: a memstore index, unless noIndex
	noIndex bool
	opts    middleware.Options                   // ReplayWait defaults to 300ms here
	card    http.Handler                         // nil: a static a2a-go card
	tasks   func(*harness) middleware.TaskSource // sets opts.Tasks
	// auth, when set, authenticates callers (a2a-go CallInterceptors) and the task
	// store keeps each task for its owner.
	auth a2asrv.CallInterceptor
}

type harness struct {
	t     *testing.T
	agent *testkit.Agent
	store *testkit.HidingStore
	index idempotency.KeyIndex
	inner http.Handler // what the middleware wraps
	srv   *httptest.Server
	wire  *recordingTransport
	hc    *http.Client
	logs  *testkit.Buffer

	mu     sync.Mutex
	events []middleware.Event
}

func newHarness(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, agent: newAgent(), logs: &testkit.Buffer{}}
	h.store = &testkit.HidingStore{Store: taskstore.NewInMemory(nil)}
	hopts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(h.store), a2asrv.WithLogger(slog.New(slog.DiscardHandler))}
	if cfg.auth != nil {
		h.store = &testkit.HidingStore{Store: taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})}
		hopts = []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(h.store), a2asrv.WithLogger(slog.New(slog.DiscardHandler)),
			a2asrv.WithCallInterceptors(cfg.auth)}
	}
	rh := a2asrv.NewHandler(h.agent, hopts...)
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	mux.Handle("/t/", http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", rh)))
	mux.Handle(jsonrpc03Path, a2av0.NewJSONRPCHandler(rh))
	mux.Handle(a2av0.RESTPathPrefix+"/", a2av0.NewRESTHandler(rh))
	card := cfg.card
	if card == nil {
		card = a2asrv.NewStaticAgentCardHandler(testCard())
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, card)
	mux.Handle(legacyCardPath, card) // as v0.3 servers often still serve it
	h.inner = mux
	h.index = cfg.index
	if h.index == nil && !cfg.noIndex {
		h.index = memstore.New(memstore.Options{})
	}
	if cfg.tasks != nil {
		cfg.opts.Tasks = cfg.tasks(h)
	}
	h.srv = httptest.NewServer(h.middleware(cfg.opts)(h.inner))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.releaseAgents)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 128
	t.Cleanup(base.CloseIdleConnections)
	h.wire = &recordingTransport{base: base}
	h.hc = &http.Client{Transport: h.wire}
	return h
}

// middleware returns a middleware over the harness's index, reporting to the
// harness, with opts (ReplayWait 300ms unless set).
func (h *harness) middleware(opts middleware.Options) func(http.Handler) http.Handler {
	h.t.Helper()
	if opts.ReplayWait == 0 {
		opts.ReplayWait = 300 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if opts.Observe == nil {
		opts.Observe = func(e middleware.Event) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.events = append(h.events, e)
		}
	}
	mw, err := middleware.New(h.index, opts)
	if err != nil {
		h.t.Fatalf("middleware.New: %v", err)
	}
	return mw
}

// releaseAgents lets every blocked agent go on.
func (h *harness) releaseAgents() {
	select {
	case <-h.agent.Hold:
	default:
		close(h.agent.Hold)
	}
}

func (h *harness) lastEvent() middleware.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		return middleware.Event{}
	}
	return h.events[len(h.events)-1]
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:               "Echo",
		Description:        "echo agent",
		Version:            "1.0.0",
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Capabilities: a2a.AgentCapabilities{Streaming: true, Extensions: []a2a.AgentExtension{
			{URI: "https://example.com/ext/geo/v1", Description: "geo", Params: map[string]any{"precision": "city"}},
		}},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}

// jsonrpc03Path is where the harness serves v0.3's JSON-RPC.
const jsonrpc03Path = "/v03/jsonrpc"

// legacyCardPath is where A2A served the agent card before v0.3.
const legacyCardPath = "/.well-known/agent.json"

// A dialect is an A2A binding in one protocol version.
type dialect struct {
	binding string // "JSONRPC" or "HTTP+JSON"
	version string // "1.0" or "0.3"
}

var (
	jsonrpc10 = dialect{"JSONRPC", "1.0"}
	rest10    = dialect{"HTTP+JSON", "1.0"}
	jsonrpc03 = dialect{"JSONRPC", "0.3"}
	rest03    = dialect{"HTTP+JSON", "0.3"}
)

func (d dialect) String() string { return d.binding + "-" + d.version }

// A mode is a dialect and whether the send streams.
type mode struct {
	dialect
	streaming bool
}

// modesOf returns every mode of ds: each dialect, unary and streaming.
func modesOf(ds ...dialect) []mode {
	var ms []mode
	for _, d := range ds {
		ms = append(ms, mode{d, false}, mode{d, true})
	}
	return ms
}

func (m mode) String() string {
	if m.streaming {
		return m.dialect.String() + "/stream"
	}
	return m.dialect.String() + "/unary"
}

// client returns an a2a-go client of dialect d, at base (the harness's server when
// empty), for tenant (none when empty; v0.3 has no tenant).
func (h *harness) client(d dialect, tenant, base string) *a2aclient.Client {
	h.t.Helper()
	if base == "" {
		base = h.srv.URL
	}
	var iface *a2a.AgentInterface
	switch {
	case d == jsonrpc03:
		iface = &a2a.AgentInterface{URL: base + jsonrpc03Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}
	case d == rest03:
		iface = &a2a.AgentInterface{URL: base, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2av0.Version}
	case d.binding == "JSONRPC":
		iface = a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC)
	case tenant != "":
		iface = a2a.NewAgentInterface(base+"/t", a2a.TransportProtocolHTTPJSON)
	default:
		iface = a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON)
	}
	if tenant != "" && d.version != "1.0" {
		h.t.Fatalf("%s has no tenant", d)
	}
	iface.Tenant = tenant
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(h.hc), a2aclient.WithRESTTransport(h.hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: h.hc}),
		a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: h.hc}))
	if err != nil {
		h.t.Fatalf("a2aclient.NewFromEndpoints: %v", err)
	}
	return c
}

// send sends req through c, streaming or not, and returns what came back: the one
// result, or every event of the stream until its end or its first error.
func send(ctx context.Context, c *a2aclient.Client, streaming bool, req *a2a.SendMessageRequest) ([]a2a.Event, error) {
	if !streaming {
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			return nil, err
		}
		return []a2a.Event{res}, nil
	}
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// keyedMessage returns a user message with text, carrying key.
func keyedMessage(t *testing.T, key, text string) *a2a.Message {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	var err error
	msg.Metadata, msg.Extensions, err = idempotency.SetKey(msg.Metadata, msg.Extensions, key)
	if err != nil {
		t.Fatalf("SetKey: %v", err)
	}
	return msg
}

// taskOf returns the task id an event names, or "".
func taskOf(ev a2a.Event) a2a.TaskID {
	if _, ok := ev.(*a2a.Message); ok {
		return ""
	}
	return ev.TaskInfo().TaskID
}

// finalState returns the state of the task after the events: the last status seen.
func finalState(evs []a2a.Event) a2a.TaskState {
	var st a2a.TaskState
	for _, ev := range evs {
		switch e := ev.(type) {
		case *a2a.Task:
			st = e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			st = e.Status.State
		}
	}
	return st
}

// recordingTransport records every exchange of the clients, as the client sent and
// received it.
type recordingTransport struct {
	base    http.RoundTripper
	discard bool // record nothing
	mu      sync.Mutex
	log     []*wireExchange
}

type wireExchange struct {
	method, path string
	reqBody      []byte
	status       int
	header       http.Header
	respBody     *testkit.Buffer
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.discard {
		return rt.base.RoundTrip(req)
	}
	x := &wireExchange{method: req.Method, path: req.URL.Path, respBody: &testkit.Buffer{}}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		x.reqBody = body
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	x.status, x.header = resp.StatusCode, resp.Header.Clone()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, x.respBody), resp.Body}
	rt.mu.Lock()
	rt.log = append(rt.log, x)
	rt.mu.Unlock()
	return resp, nil
}

// last returns the last exchange recorded.
func (rt *recordingTransport) last() *wireExchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.log) == 0 {
		return nil
	}
	return rt.log[len(rt.log)-1]
}
