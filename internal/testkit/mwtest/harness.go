// Package mwtest is the middleware's test harness, for the middleware's own tests
// (middleware/) and for its A2A v0.3 runs (internal/e2e/middleware, the module that
// may import a2a-go v0.3.x and gRPC).
//
// [New] runs a real a2a-go v2.4.0 server behind the middleware, as the wire
// reference's experiment does: the JSON-RPC handler at /jsonrpc, the HTTP+JSON
// handler under /rest, the tenant HTTP+JSON handler under /t/{tenant}, and a static
// agent card (at the legacy path too). Tests drive it with a2a-go's own clients over
// HTTP ([Harness.Client]), and read what crossed the wire ([RecordingTransport]),
// what the wrapped handler received ([InnerRecorder]), what the middleware answered
// ([ServedRecorder]) and the Events it observed. The package imports nothing of
// a2a-go v0.3: a module that may (internal/e2e) mounts a2a-go's v0.3 handlers with
// Config.Mount and speaks them with Config.Interface and Config.ClientOptions.
package mwtest

import (
	"context"
	"errors"
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
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// NewAgent returns the harness's agent, the test kit's; the first word of the message's text chooses what it
// does:
//
//	echo   creates a task, works, adds an artifact, completes
//	reply  answers with a Message, no task
//	fail   fails before creating a task on its first run, then behaves as echo
//	block  creates a task, works, then waits for the gate (Hold) before completing
//	hold   waits for the gate before creating anything, then behaves as echo
//
// It sends the task id of each run it starts on Started (buffered).
func NewAgent() *testkit.Agent {
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

// Config configures a Harness; the zero value runs a memstore index.
type Config struct {
	Index   idempotency.KeyIndex // nil: a memstore index, unless NoIndex
	NoIndex bool
	Opts    middleware.Options                   // ReplayWait defaults to 300ms here
	Card    http.Handler                         // nil: a static a2a-go card
	Inner   http.Handler                         // nil: the a2a-go mux
	Record  bool                                 // record what the wrapped handler received and wrote
	Tasks   func(*Harness) middleware.TaskSource // sets Opts.Tasks
	// Mount, when set, adds routes to the a2a-go mux, over its request handler.
	Mount func(mux *http.ServeMux, rh a2asrv.RequestHandler)
	// Wrap, when set, wraps the a2a-go mux (not Inner) before the middleware.
	Wrap func(http.Handler) http.Handler
	// Served records what the middleware answered, in Harness.Answered (the
	// Middleware then writes to a wrapped ResponseWriter).
	Served bool
	// Adapter runs the agent behind the kit's adapter, and the task store behind
	// adapter.BindingStore, which binds the key once the task is stored.
	Adapter bool
	// Auth, when set, authenticates callers (an a2a-go CallInterceptor of the
	// handler), and the task store keeps each task for its owner.
	Auth a2asrv.CallInterceptor
	// Interface, when set, returns the agent interface at base of a dialect that
	// Mount serves (another protocol version's), or nil for v1.0's own.
	Interface func(d Dialect, base string) *a2a.AgentInterface
	// ClientOptions, when set, adds options to every client's (another version's
	// transports), over the harness's HTTP client hc.
	ClientOptions func(hc *http.Client) []a2aclient.FactoryOption
}

// Harness is an a2a-go server behind the middleware, served over HTTP, with its
// clients' HTTP client.
type Harness struct {
	T        *testing.T
	Agent    *testkit.Agent
	Store    *testkit.HidingStore
	Index    idempotency.KeyIndex
	Inner    http.Handler // what the middleware wraps
	Server   *httptest.Server
	Wire     *RecordingTransport
	HTTP     *http.Client
	Logs     *testkit.Buffer
	Received *InnerRecorder  // what the wrapped handler received, with Config.Record
	Answered *ServedRecorder // what the middleware answered, with Config.Served

	cfg    Config
	mu     sync.Mutex
	events []middleware.Event
}

// New starts a harness for the test t, closed when it ends.
func New(t *testing.T, cfg Config) *Harness {
	t.Helper()
	h := &Harness{T: t, Agent: NewAgent(), Logs: &testkit.Buffer{}, cfg: cfg}
	var owners *taskstore.InMemoryStoreConfig
	if cfg.Auth != nil {
		owners = &taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()}
	}
	h.Store = &testkit.HidingStore{Store: taskstore.NewInMemory(owners)}
	var exec a2asrv.AgentExecutor = h.Agent
	var tasks taskstore.Store = h.Store
	if cfg.Adapter {
		aopts := adapter.Options{Logger: slog.New(slog.NewTextHandler(h.Logs, nil))}
		exec = adapter.NewExecutor(h.Agent, aopts)
		tasks = adapter.NewBindingStore(h.Store, aopts)
	}
	hopts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(tasks), a2asrv.WithLogger(slog.New(slog.DiscardHandler))}
	if cfg.Auth != nil {
		hopts = append(hopts, a2asrv.WithCallInterceptors(cfg.Auth))
	}
	rh := a2asrv.NewHandler(exec, hopts...)
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	mux.Handle("/t/", http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", rh)))
	card := cfg.Card
	if card == nil {
		card = a2asrv.NewStaticAgentCardHandler(Card())
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, card)
	mux.Handle(LegacyCardPath, card) // as v0.3 servers often still serve it
	if cfg.Mount != nil {
		cfg.Mount(mux, rh)
	}
	h.Inner = mux
	if cfg.Wrap != nil {
		h.Inner = cfg.Wrap(mux)
	}
	if cfg.Inner != nil {
		h.Inner = cfg.Inner
	}
	if cfg.Record {
		h.Received = &InnerRecorder{next: h.Inner}
		h.Inner = h.Received
	}
	h.Index = cfg.Index
	if h.Index == nil && !cfg.NoIndex {
		h.Index = memstore.New(memstore.Options{})
	}
	if cfg.Tasks != nil {
		cfg.Opts.Tasks = cfg.Tasks(h)
	}
	var front http.Handler = h.Middleware(cfg.Opts)(h.Inner)
	if cfg.Served {
		h.Answered = &ServedRecorder{next: front}
		front = h.Answered
	}
	h.Server = httptest.NewServer(front)
	t.Cleanup(h.CheckMarkers) // runs last, once the server is closed
	t.Cleanup(h.Server.Close)
	t.Cleanup(h.ReleaseAgents)
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 128
	t.Cleanup(base.CloseIdleConnections)
	h.Wire = &RecordingTransport{Base: base}
	h.HTTP = &http.Client{Transport: h.Wire}
	return h
}

// CheckMarkers holds every answer the harness's clients got to
// wireclient.MarkerRule (the replay marker on every answer served from a first
// attempt, on no first send and no refusal), and fails the test when it is broken.
// New runs it when the test ends.
func (h *Harness) CheckMarkers() {
	if h.Wire == nil {
		return
	}
	var rule wireclient.MarkerRule
	for _, x := range h.Wire.Exchanges() {
		if x.Method == http.MethodPost {
			rule.CheckExchange(x.Path, x.ReqHeader, x.ReqBody, x.Status, x.Header, x.RespBody.Bytes())
		}
	}
	if err := rule.Err(); err != nil {
		h.T.Error(err)
	}
}

// Middleware returns a middleware over the harness's index, reporting to the
// harness, with opts (ReplayWait 300ms unless set).
func (h *Harness) Middleware(opts middleware.Options) func(http.Handler) http.Handler {
	h.T.Helper()
	if opts.ReplayWait == 0 {
		opts.ReplayWait = 300 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(h.Logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if opts.Observe == nil {
		opts.Observe = func(e middleware.Event) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.events = append(h.events, e)
		}
	}
	mw, err := middleware.New(h.Index, opts)
	if err != nil {
		h.T.Fatalf("middleware.New: %v", err)
	}
	return mw
}

// SecondServer serves the same server through another middleware over the same
// index, as a second process would.
func (h *Harness) SecondServer(opts middleware.Options) string {
	srv := httptest.NewServer(h.Middleware(opts)(h.Inner))
	h.T.Cleanup(srv.Close)
	return srv.URL
}

// ReleaseAgents lets every blocked agent go on.
func (h *Harness) ReleaseAgents() {
	select {
	case <-h.Agent.Hold:
	default:
		close(h.Agent.Hold)
	}
}

// ExpectRanOnce checks that the agent ran the message msgID exactly once. It takes
// the t of the (sub)test it runs in, which need not be the one h was made with.
func (h *Harness) ExpectRanOnce(t *testing.T, msgID string) {
	t.Helper()
	if n := h.Agent.RunsOf(msgID); n != 1 {
		t.Fatalf("agent ran message %s %d times, want 1", msgID, n)
	}
}

// Outcomes returns the outcomes observed so far.
func (h *Harness) Outcomes() []middleware.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []middleware.Outcome
	for _, e := range h.events {
		out = append(out, e.Outcome)
	}
	return out
}

// ExpectOutcomes waits until the middleware observed as many sends as want lists
// (a send is observed when its handler returns, which may be after its client read
// the answer), and checks that the outcomes are want's, in any order.
func (h *Harness) ExpectOutcomes(want ...middleware.Outcome) {
	h.T.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.Outcomes()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got := h.Outcomes()
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.T.Fatalf("observed outcomes %v, want %v", got, want)
	}
}

// Events returns the Events observed so far.
func (h *Harness) Events() []middleware.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// EventAt waits for the middleware to observe its n-th send (from 0) and returns it.
func (h *Harness) EventAt(n int) middleware.Event {
	h.T.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		if len(h.events) > n {
			e := h.events[n]
			h.mu.Unlock()
			return e
		}
		h.mu.Unlock()
		if time.Now().After(deadline) {
			h.T.Fatalf("no %d-th keyed send observed", n+1)
		}
		time.Sleep(time.Millisecond)
	}
}

// LastEvent returns the last Event observed, or the zero Event.
func (h *Harness) LastEvent() middleware.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) == 0 {
		return middleware.Event{}
	}
	return h.events[len(h.events)-1]
}

// DiscardLogger returns a logger that drops everything.
func DiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// Card returns the harness's agent card: a2a-go's, for an echo agent that streams
// and declares an extension of its own.
func Card() *a2a.AgentCard {
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

// JSONRPC03Path is where a server serves v0.3's JSON-RPC (the harness serves it only
// where a2a-go v0.3 may be imported, through Config.Mount; elsewhere requests there
// test what the middleware does on its own).
const JSONRPC03Path = "/v03/jsonrpc"

// LegacyCardPath is where A2A served the agent card before v0.3.
const LegacyCardPath = "/.well-known/agent.json"
