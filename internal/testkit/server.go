package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

// Paths of a server's endpoints, relative to its base URL.
const (
	// JSONRPCPath is the JSON-RPC binding, listed first in the card.
	JSONRPCPath = "/jsonrpc"
	// RESTPath prefixes the HTTP+JSON routes: POST /rest/message:send, ...
	RESTPath = "/rest"
	// TenantRESTPath prefixes the HTTP+JSON routes with a tenant path segment:
	// POST /tenants/{tenant}/message:send, ... (not listed in the card).
	TenantRESTPath = "/tenants"
	// VarsPath serves {"agent_runs": n}, the shape expvar serves.
	VarsPath = "/debug/vars"
	// MetricsPath serves the middleware's outcomes (middleware/metrics) when the kit
	// is in front.
	MetricsPath = "/metrics"
	// RunsVar is the name of the run counter in the document at VarsPath.
	RunsVar = "agent_runs"
)

// Config configures a server: a real a2a-go v1.0 server (JSON-RPC at JSONRPCPath,
// HTTP+JSON at RESTPath and TenantRESTPath, an agent card at the well-known path, the
// run counter at VarsPath), with an in-memory task store unless TaskStore is set. The zero value is a bare
// server for a zero [Agent].
type Config struct {
	// Agent is the agent the server runs and counts the runs of; nil: a zero Agent.
	Agent *Agent
	// Executor, when set, is run instead of Agent: an agent a test has wrapped itself
	// (in adapter.NewExecutor, say). The server's run counter still reads Agent.
	Executor a2asrv.AgentExecutor

	// Index, when set, puts the kit in front of the server: the middleware over Index,
	// and the adapter's Executor and FollowUpBinder around the agent, as the adapter's
	// package documentation wires them.
	Index idempotency.KeyIndex
	// Middleware configures the middleware when Index is set. Its Logger defaults to
	// Logger.
	Middleware middleware.Options
	// TaskReader, when Index is set, answers replays from the task store through
	// adapter.NewTaskReader instead of a GetTask round trip through the handler.
	TaskReader bool
	// TaskStore is the a2a-go task store of the server (a2atasks beside the keys, say);
	// nil: [NewStore]. A test that installs its own adapter.FollowUpBinder passes it
	// the same store.
	TaskStore taskstore.Store
	// Wrap, when set, is put in front of the whole server (card and endpoints),
	// outside the kit's middleware if Index is set too.
	Wrap func(http.Handler) http.Handler

	// Extensions are listed in the card's capabilities.extensions.
	Extensions []a2a.AgentExtension
	// HandlerOptions are passed to a2asrv.NewHandler after the task store.
	HandlerOptions []a2asrv.RequestHandlerOption
	// BaseURL is the server's base URL as clients reach it, for the agent card. Start
	// and NewServer set it.
	BaseURL string
	// Logger receives a2a-go's logs (and the middleware's, unless Middleware.Logger
	// is set); nil discards them.
	Logger *slog.Logger
}

// Server is a server's handler and what a test reads of it.
type Server struct {
	// Handler serves the whole server.
	Handler http.Handler
	// Card is the card the server serves (without the extension the middleware adds).
	Card *a2a.AgentCard
	// Store is the task store the a2a-go handler writes to.
	Store taskstore.Store
	// Agent is the agent whose runs the server counts.
	Agent *Agent
}

// New returns a server configured by cfg.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ag := cfg.Agent
	if ag == nil {
		ag = &Agent{}
	}
	var exec a2asrv.AgentExecutor = ag
	if cfg.Executor != nil {
		exec = cfg.Executor
	}
	store := cfg.TaskStore
	if store == nil {
		store = NewStore()
	}
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithLogger(log)}
	if cfg.Index != nil {
		// The adapter's wiring: keys bound once their task is stored (a2atasks binds
		// them itself, and BindingStore then finds them bound).
		aopts := adapter.Options{Logger: log}
		exec = adapter.NewExecutor(exec, aopts)
		opts = append(opts, a2asrv.WithTaskStore(adapter.NewBindingStore(store, aopts)),
			a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, aopts)))
	} else {
		opts = append(opts, a2asrv.WithTaskStore(store))
	}
	handler := a2asrv.NewHandler(exec, append(opts, cfg.HandlerOptions...)...)

	card := newCard(cfg.BaseURL, cfg.Extensions)
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle(JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle(RESTPath+"/", http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(handler)))
	mux.Handle(TenantRESTPath+"/", http.StripPrefix(TenantRESTPath, a2asrv.NewTenantRESTHandler("/{*}", handler)))
	mux.HandleFunc("GET "+VarsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write([]byte(`{"` + RunsVar + `": ` + strconv.FormatInt(ag.Runs(), 10) + "}\n"))
	})

	s := &Server{Handler: mux, Card: card, Store: store, Agent: ag}
	if cfg.Index != nil {
		mopts := cfg.Middleware
		if mopts.Logger == nil {
			mopts.Logger = log
		}
		if cfg.TaskReader {
			mopts.Tasks = adapter.NewTaskReader(store, adapter.TaskReaderOptions{})
		}
		collector := metrics.New()
		mux.Handle("GET "+MetricsPath, collector)
		if observe := mopts.Observe; observe != nil {
			mopts.Observe = func(e middleware.Event) {
				collector.Observe(e)
				observe(e)
			}
		} else {
			mopts.Observe = collector.Observe
		}
		mw, err := middleware.New(cfg.Index, mopts)
		if err != nil {
			return nil, err
		}
		s.Handler = mw(s.Handler)
	}
	if cfg.Wrap != nil {
		s.Handler = cfg.Wrap(s.Handler)
	}
	return s, nil
}

// NewStore returns the task store a server uses by default: a2a-go's in-memory store,
// which hides a task from callers other than its owner.
func NewStore() taskstore.Store {
	return taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})
}

// Runs returns how many times the server's agent started.
func (s *Server) Runs() int64 { return s.Agent.Runs() }

// Task returns the task id as the store has it now, or nil when it does not exist.
func (s *Server) Task(t testing.TB, id a2a.TaskID) *a2a.Task {
	t.Helper()
	ctx, _ := a2asrv.NewCallContext(context.Background(), nil)
	stored, err := s.Store.Get(ctx, id)
	if errors.Is(err, a2a.ErrTaskNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("read task %s: %v", id, err)
	}
	return stored.Task
}

// Running is a server listening on loopback.
type Running struct {
	*Server
	// URL is the base URL, http://127.0.0.1:port; the card is at
	// URL + a2asrv.WellKnownAgentCardPath.
	URL string

	srv *http.Server
}

// Start starts a server configured by cfg on a free loopback port. Close it when done.
func Start(cfg Config) (*Running, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	cfg.BaseURL = url
	s, err := New(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &Running{Server: s, URL: url, srv: srv}, nil
}

// NewServer starts a server configured by cfg for a test, failing t when it cannot,
// and closes it when the test ends.
func NewServer(t testing.TB, cfg Config) *Running {
	t.Helper()
	r, err := Start(cfg)
	if err != nil {
		t.Fatalf("start the test server: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Close stops the server at once, cutting open connections.
func (r *Running) Close() error {
	err := r.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// newCard returns the agent card served at base, with a JSON-RPC and an HTTP+JSON
// interface.
func newCard(base string, extensions []a2a.AgentExtension) *a2a.AgentCard {
	if base == "" {
		base = "http://127.0.0.1"
	}
	return &a2a.AgentCard{
		Name:        "echo",
		Description: "echoes the text it is sent",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, Extensions: extensions},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}

// ReadRuns reads the run counter named name (RunsVar when empty) from an expvar-style
// JSON document at url, such as this package's VarsPath or an expvar handler's.
func ReadRuns(ctx context.Context, hc *http.Client, url, name string) (int64, error) {
	if name == "" {
		name = RunsVar
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, errors.New("GET " + url + ": " + resp.Status)
	}
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return 0, errors.New("GET " + url + ": not a JSON object: " + err.Error())
	}
	raw, ok := vars[name]
	if !ok {
		return 0, errors.New("GET " + url + ": no variable " + strconv.Quote(name))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, errors.New("GET " + url + ": variable " + strconv.Quote(name) + " is not an integer: " + string(raw))
	}
	return n, nil
}
