// Package echoserver runs a real a2a-go v2.4.0 echo server, bare or wrapped by the
// kit, for the kit's benchmarks, load harness, crash and fault tests.
//
// The server mounts a2a-go's JSON-RPC handler at /jsonrpc, its HTTP+JSON handler
// under /rest, a static agent card at the well-known path, and the agent's run
// counter at GET /debug/vars as {"agent_runs": n}, the shape expvar serves. When
// Config.Index is set, the whole mux is wrapped by the kit's middleware over that
// index, and the agent by the adapter's Executor and FollowUpBinder, as the adapter's
// package documentation wires them. Without an index the server is bare: a2a-go and
// the agent only.
//
// The agent echoes: it creates a task, reports it working, waits a random time up to
// Config.Delay, adds an artifact and completes the task. A message whose text begins
// with "reply" is answered with a Message instead, without a task.
package echoserver

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/middleware"
)

// Paths of the server's endpoints, relative to its base URL.
const (
	JSONRPCPath = "/jsonrpc"
	RESTPath    = "/rest"
	VarsPath    = "/debug/vars"
	// RunsVar is the name of the run counter in the document at VarsPath.
	RunsVar = "agent_runs"
)

// Config configures a server. The zero value is a bare echo server.
type Config struct {
	// Index, when set, puts the kit in front of the server: the middleware over Index,
	// and the adapter's Executor and FollowUpBinder around the agent.
	Index idempotency.KeyIndex
	// Middleware configures the middleware when Index is set. Its Logger defaults to
	// Logger.
	Middleware middleware.Options
	// TaskReader, when Index is set, answers replays from the task store through
	// adapter.TaskReader instead of a GetTask round trip through the handler.
	TaskReader bool

	// Delay is the longest the agent works on a task: each run waits a random time in
	// [0, Delay] after reporting the task working. Zero means no wait.
	Delay time.Duration
	// OnRun, when set, is called as each run of the agent starts, before anything
	// else, with the run's executor context. The crash test records runs with it in a
	// place that survives the process.
	OnRun func(ctx context.Context, ec *a2asrv.ExecutorContext)

	// BaseURL is the server's base URL as clients reach it, for the agent card. Start
	// sets it.
	BaseURL string
	// Logger receives a2a-go's logs (and the middleware's, unless
	// Config.Middleware.Logger is set); nil discards them.
	Logger *slog.Logger
}

// Server is an echo server. Its Handler serves every endpoint.
type Server struct {
	// Handler serves the whole server: the kit's middleware when Config.Index is set,
	// the a2a-go mux otherwise.
	Handler http.Handler
	// Store is the task store the a2a-go handler writes to.
	Store taskstore.Store

	agent *agent
}

// New returns a server configured by cfg.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ag := &agent{delay: cfg.Delay, onRun: cfg.OnRun}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(store), a2asrv.WithLogger(log)}
	var exec a2asrv.AgentExecutor = ag
	if cfg.Index != nil {
		aopts := adapter.Options{Logger: log}
		exec = adapter.NewExecutor(ag, aopts)
		opts = append(opts, a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(aopts)))
	}
	handler := a2asrv.NewHandler(exec, opts...)

	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card(cfg.BaseURL)))
	mux.Handle(JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle(RESTPath+"/", http.StripPrefix(RESTPath, a2asrv.NewRESTHandler(handler)))
	mux.HandleFunc("GET "+VarsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write([]byte(`{"` + RunsVar + `": ` + strconv.FormatInt(ag.runs.Load(), 10) + "}\n"))
	})

	s := &Server{Handler: mux, Store: store, agent: ag}
	if cfg.Index == nil {
		return s, nil
	}
	mopts := cfg.Middleware
	if mopts.Logger == nil {
		mopts.Logger = log
	}
	if cfg.TaskReader {
		mopts.Tasks = adapter.NewTaskReader(store, adapter.TaskReaderOptions{})
	}
	mw, err := middleware.New(cfg.Index, mopts)
	if err != nil {
		return nil, err
	}
	s.Handler = mw(mux)
	return s, nil
}

// Runs returns how many times the agent started.
func (s *Server) Runs() int64 { return s.agent.runs.Load() }

// Running is a server listening on loopback.
type Running struct {
	*Server
	// URL is the base URL, http://127.0.0.1:port.
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

// Close stops the server at once, cutting open connections.
func (r *Running) Close() error {
	err := r.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// card returns the agent card served at base.
func card(base string) *a2a.AgentCard {
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
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}

// agent is the echo agent.
type agent struct {
	delay time.Duration
	onRun func(ctx context.Context, ec *a2asrv.ExecutorContext)
	runs  atomic.Int64
}

func (a *agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if a.onRun != nil {
			a.onRun(ctx, ec)
		}
		a.runs.Add(1)
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		if ec.StoredTask == nil && strings.HasPrefix(text, "reply") {
			yield(a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("echo: "+text)), nil)
			return
		}
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if a.delay > 0 {
			t := time.NewTimer(rand.N(a.delay + 1))
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				yield(nil, ctx.Err())
				return
			}
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
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
