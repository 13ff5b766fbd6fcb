package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// The harness runs a real a2a-go v2.4.0 server behind the middleware, as the wire
// reference's experiment does: the JSON-RPC handler at /jsonrpc, the HTTP+JSON
// handler under /rest, the tenant HTTP+JSON handler under /t/{tenant}, and a static
// agent card (at the legacy path too). Tests drive it with a2a-go's own v1.0 clients
// over HTTP. A2A v0.3 runs through a2a-go's a2acompat/a2av0, which imports a2a-go
// v0.3.x and gRPC, modules the library's go.mod must not list: the same behaviours in
// v0.3's dialects are tested in the internal/e2e module (internal/e2e/middleware).

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
	inner   http.Handler                         // nil: the a2a-go mux
	record  bool                                 // record what the wrapped handler received and wrote
	tasks   func(*harness) middleware.TaskSource // sets opts.Tasks
	// mount, when set, adds routes to the a2a-go mux, over its request handler.
	mount func(mux *http.ServeMux, rh a2asrv.RequestHandler)
	// wrap, when set, wraps the a2a-go mux (not inner) before the middleware.
	wrap func(http.Handler) http.Handler
	// served records what the middleware answered, in harness.served (the
	// middleware then writes to a wrapped ResponseWriter).
	served bool
	// adapter runs the agent behind the kit's adapter, and the task store behind
	// adapter.BindingStore, which binds the key once the task is stored.
	adapter bool
}

type harness struct {
	t      *testing.T
	agent  *testkit.Agent
	store  *testkit.HidingStore
	index  idempotency.KeyIndex
	inner  http.Handler // what the middleware wraps
	srv    *httptest.Server
	wire   *recordingTransport
	hc     *http.Client
	logs   *testkit.Buffer
	innerR *innerRecorder
	served *servedRecorder // what the middleware answered

	mu     sync.Mutex
	events []middleware.Event
}

func newHarness(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, agent: newAgent(), logs: &testkit.Buffer{}}
	h.store = &testkit.HidingStore{Store: taskstore.NewInMemory(nil)}
	var exec a2asrv.AgentExecutor = h.agent
	var tasks taskstore.Store = h.store
	if cfg.adapter {
		aopts := adapter.Options{Logger: slog.New(slog.NewTextHandler(h.logs, nil))}
		exec = adapter.NewExecutor(h.agent, aopts)
		tasks = adapter.NewBindingStore(h.store, aopts)
	}
	rh := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(tasks), a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	mux.Handle("/t/", http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", rh)))
	card := cfg.card
	if card == nil {
		card = a2asrv.NewStaticAgentCardHandler(testCard())
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, card)
	mux.Handle(legacyCardPath, card) // as v0.3 servers often still serve it
	if cfg.mount != nil {
		cfg.mount(mux, rh)
	}
	h.inner = mux
	if cfg.wrap != nil {
		h.inner = cfg.wrap(mux)
	}
	if cfg.inner != nil {
		h.inner = cfg.inner
	}
	if cfg.record {
		h.innerR = &innerRecorder{next: h.inner}
		h.inner = h.innerR
	}
	h.index = cfg.index
	if h.index == nil && !cfg.noIndex {
		h.index = memstore.New(memstore.Options{})
	}
	if cfg.tasks != nil {
		cfg.opts.Tasks = cfg.tasks(h)
	}
	var front http.Handler = h.middleware(cfg.opts)(h.inner)
	if cfg.served {
		h.served = &servedRecorder{next: front}
		front = h.served
	}
	h.srv = httptest.NewServer(front)
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

// secondServer serves the same server through another middleware over the same
// index, as a second process would.
func (h *harness) secondServer(opts middleware.Options) string {
	srv := httptest.NewServer(h.middleware(opts)(h.inner))
	h.t.Cleanup(srv.Close)
	return srv.URL
}

// releaseAgents lets every blocked agent go on.
func (h *harness) releaseAgents() {
	select {
	case <-h.agent.Hold:
	default:
		close(h.agent.Hold)
	}
}

// outcomes returns the outcomes observed so far.
func (h *harness) outcomes() []middleware.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []middleware.Outcome
	for _, e := range h.events {
		out = append(out, e.Outcome)
	}
	return out
}

// expectOutcomes waits until the middleware observed as many sends as want lists
// (a send is observed when its handler returns, which may be after its client read
// the answer), and checks that the outcomes are want's, in any order.
func (h *harness) expectOutcomes(want ...middleware.Outcome) {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.outcomes()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got := h.outcomes()
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.t.Fatalf("observed outcomes %v, want %v", got, want)
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
		// The interfaces tell the middleware's default tenant routes where HTTP+JSON
		// is mounted (/rest, the tenant handler's /t, /api/v1), so that a send there
		// is in the scope of the tenant a2a-go routes it by.
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface("http://localhost/jsonrpc", a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface("http://localhost/rest", a2a.TransportProtocolHTTPJSON),
			a2a.NewAgentInterface("http://localhost/t", a2a.TransportProtocolHTTPJSON),
			a2a.NewAgentInterface("http://localhost/api/v1", a2a.TransportProtocolHTTPJSON),
		},
	}
}

// jsonrpc03Path is where a server would serve v0.3's JSON-RPC (this harness's server
// has no v0.3 handler: requests there test what the middleware does on its own).
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
)

// dialects are the dialects the harness drives: A2A v1.0's, which have tenants.
var dialects = []dialect{jsonrpc10, rest10}

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

var modes = modesOf(dialects...)

func (m mode) String() string {
	if m.streaming {
		return m.dialect.String() + "/stream"
	}
	return m.dialect.String() + "/unary"
}

// client returns an a2a-go client of dialect d, at base (the harness's server when
// empty), for tenant (none when empty).
func (h *harness) client(d dialect, tenant, base string) *a2aclient.Client {
	h.t.Helper()
	if base == "" {
		base = h.srv.URL
	}
	var iface *a2a.AgentInterface
	switch {
	case d.binding == "JSONRPC":
		iface = a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC)
	case tenant != "":
		iface = a2a.NewAgentInterface(base+"/t", a2a.TransportProtocolHTTPJSON)
	default:
		iface = a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON)
	}
	iface.Tenant = tenant
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface},
		a2aclient.WithJSONRPCTransport(h.hc), a2aclient.WithRESTTransport(h.hc))
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

// waitState polls the task through c until it reaches state.
func waitState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
		if err == nil && task.Status.State == state {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s did not reach %s (last: %v, %v)", id, state, task, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitInactive waits until a2a-go no longer runs an execution for task id: a
// subscription to it then fails.
func waitInactive(t *testing.T, c *a2aclient.Client, id a2a.TaskID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		for _, err = range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				break
			}
		}
		if errors.Is(err, a2a.ErrTaskNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still has an active execution", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
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

// exchanges returns the exchanges recorded so far.
func (rt *recordingTransport) exchanges() []*wireExchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]*wireExchange(nil), rt.log...)
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

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// innerRecorder records what the wrapped handler received and wrote.
type innerRecorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []*innerExchange
}

type innerExchange struct {
	method, path string
	reqBody      []byte
	wrapped      bool // the ResponseWriter was not net/http's own
	respBody     *testkit.Buffer
}

func (ir *innerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &innerExchange{method: r.Method, path: r.URL.Path, respBody: &testkit.Buffer{}}
	x.wrapped = !strings.HasPrefix(typeName(w), "*http.")
	body, _ := io.ReadAll(r.Body)
	x.reqBody = body
	r.Body = io.NopCloser(bytes.NewReader(body))
	ir.mu.Lock()
	ir.log = append(ir.log, x)
	ir.mu.Unlock()
	ir.next.ServeHTTP(&teeWriter{ResponseWriter: w, tee: x.respBody}, r)
}

func (ir *innerRecorder) exchanges() []*innerExchange {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	return append([]*innerExchange(nil), ir.log...)
}

// teeWriter copies what is written to tee; it flushes and unwraps.
type teeWriter struct {
	http.ResponseWriter
	tee io.Writer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.tee.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// servedRecorder records what the handler it wraps (the middleware) answered each
// request, in the order the requests came.
type servedRecorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []*servedAnswer
}

type servedAnswer struct {
	path   string
	mu     sync.Mutex
	status int
	body   *testkit.Buffer
	left   chan struct{} // closed when the request's context ends (its client left, or it was answered)
}

// code returns the status answered, 0 when nothing was.
func (a *servedAnswer) code() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

func (sr *servedRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == a2asrv.WellKnownAgentCardPath {
		// The middleware's own read of the card (its tenant routes learn the
		// HTTP+JSON mounts) is not an answer to a send.
		sr.next.ServeHTTP(w, r)
		return
	}
	a := &servedAnswer{path: r.URL.Path, body: &testkit.Buffer{}, left: make(chan struct{})}
	context.AfterFunc(r.Context(), func() { close(a.left) })
	sr.mu.Lock()
	sr.log = append(sr.log, a)
	sr.mu.Unlock()
	sr.next.ServeHTTP(&statusWriter{teeWriter: teeWriter{ResponseWriter: w, tee: a.body}, a: a}, r)
}

func (sr *servedRecorder) answers() []*servedAnswer {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return append([]*servedAnswer(nil), sr.log...)
}

// statusWriter is a teeWriter that records the status.
type statusWriter struct {
	teeWriter
	a *servedAnswer
}

func (w *statusWriter) WriteHeader(code int) {
	w.a.mu.Lock()
	if w.a.status == 0 && code >= 200 {
		w.a.status = code
	}
	w.a.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.a.mu.Lock()
	if w.a.status == 0 {
		w.a.status = http.StatusOK
	}
	w.a.mu.Unlock()
	return w.teeWriter.Write(p)
}
