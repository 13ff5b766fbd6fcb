package routers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/go-chi/chi/v5"
	"github.com/gorilla/mux"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	st "github.com/a2akit/idempotency/internal/testkit/sendtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// A router mounts a2a-go's handlers (the agent card, JSON-RPC at /jsonrpc, HTTP+JSON
// under /rest) with the kit installed the router's way.
type router struct {
	name  string
	mount func(idem func(http.Handler) http.Handler, card, jsonrpc, rest http.Handler) http.Handler
}

var routers = []router{
	{"stdlib", func(idem func(http.Handler) http.Handler, card, jsonrpc, rest http.Handler) http.Handler {
		m := http.NewServeMux()
		m.Handle(a2asrv.WellKnownAgentCardPath, card)
		m.Handle("/jsonrpc", jsonrpc)
		m.Handle("/rest/", http.StripPrefix("/rest", rest))
		return idem(m)
	}},
	{"chi", func(idem func(http.Handler) http.Handler, card, jsonrpc, rest http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Use(idem)
		r.Method(http.MethodGet, a2asrv.WellKnownAgentCardPath, card)
		r.Handle("/jsonrpc", jsonrpc)
		r.Mount("/rest", http.StripPrefix("/rest", rest))
		return r
	}},
	{"gorilla", func(idem func(http.Handler) http.Handler, card, jsonrpc, rest http.Handler) http.Handler {
		r := mux.NewRouter()
		r.Use(idem)
		r.Handle(a2asrv.WellKnownAgentCardPath, card).Methods(http.MethodGet, http.MethodHead)
		r.Handle("/jsonrpc", jsonrpc)
		r.PathPrefix("/rest/").Handler(http.StripPrefix("/rest", rest))
		return r
	}},
}

// Configuration shared by every server of the matrix.
const (
	lease      = time.Second
	replayWait = 300 * time.Millisecond
	maxBody    = 64 << 10
)

// errScope is what Options.Scope answers a request with the header X-Scope: fail.
var errScope = errors.New("the scope of this caller cannot be told")

// server is a2a-go with the adapter, on one router, behind the kit over index.
type server struct {
	url   string
	agent *testkit.Agent
	store *testkit.HidingStore
}

func startServer(t *testing.T, rt router, index idempotency.KeyIndex) *server {
	t.Helper()
	s := &server{agent: &testkit.Agent{WaitWord: true, ReplyPrefix: "reply"}, store: &testkit.HidingStore{Store: taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{
		Authenticator: a2asrv.NewTaskStoreAuthenticator()})}}
	handler := a2asrv.NewHandler(adapter.NewExecutor(s.agent, adapter.Options{}),
		a2asrv.WithTaskStore(adapter.NewBindingStore(s.store, adapter.Options{})),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(s.store, adapter.Options{})))
	idem, err := middleware.New(index, middleware.Options{Lease: lease, ReplayWait: replayWait, MaxBodyBytes: maxBody,
		Scope: func(r *http.Request, tenant string) (string, error) {
			if r.Header.Get("X-Scope") == "fail" {
				return "", errScope
			}
			return tenant, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	card := &a2a.AgentCard{Name: "echo", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: true}}
	srv := httptest.NewServer(rt.mount(idem, a2asrv.NewStaticAgentCardHandler(card), a2asrv.NewJSONRPCHandler(handler),
		a2asrv.NewRESTHandler(handler)))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// failing returns the test kit's faulty index over ix, failing every call of op.
func failing(ix idempotency.KeyIndex, op testkit.Op) *testkit.FaultyIndex {
	f := testkit.NewFaultyIndex(ix)
	f.SetFail(op, true)
	return f
}

// env is one cell of the matrix: a router, a binding and unary or streaming.
type env struct {
	t         *testing.T
	b         st.Binding
	streaming bool
	srv       *server
	// Servers whose index cannot honour keys, fails claims, fails binds.
	noIndex, failClaim, failBind *server
}

func (e *env) msg(text string) st.Msg { return st.NewMsg(e.b, e.streaming, text) }

// send sends m and returns its answer: the whole answer, or a stream's first event.
func (e *env) send(base string, m st.Msg) st.Answer {
	e.t.Helper()
	a, err := st.Send(context.Background(), base, m)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// run sends m to its end: the unary answer, or every event of the stream.
func (e *env) run(m st.Msg) []st.Answer {
	e.t.Helper()
	if !e.streaming {
		return []st.Answer{e.send(e.srv.url, m)}
	}
	s, err := st.OpenStream(context.Background(), e.srv.url, m)
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	all, err := s.Rest()
	if err != nil {
		e.t.Fatal(err)
	}
	return all
}

// wantError checks a refusal: its HTTP status, its JSON-RPC code or HTTP+JSON
// status name, and that its message contains text.
func (e *env) wantError(a st.Answer, status, rpcCode int, restStatus, text string) {
	e.t.Helper()
	ok := a.Kind == "error" && a.Status == status && strings.Contains(a.Message, text)
	if e.b == st.JSONRPC {
		ok = ok && a.Code == rpcCode
	} else {
		ok = ok && a.ErrStatus == restStatus
	}
	if !ok {
		e.t.Errorf("got %v (message %q); want HTTP %d, %d / %s, a message containing %q", a, a.Message, status, rpcCode, restStatus, text)
	}
}

func (e *env) wantRuns(m st.Msg, want int64) {
	e.t.Helper()
	if got := e.srv.agent.RunsOf(m.ID) + e.failBind.agent.RunsOf(m.ID); got != want {
		e.t.Errorf("the agent ran %d times for %s, want %d", got, m.ID, want)
	}
}

// errStatus is the HTTP status of a refusal that is restStatus on HTTP+JSON, and a
// JSON-RPC error with HTTP 200 on JSON-RPC.
func (e *env) errStatus(restStatus int) int {
	if e.b == st.HTTPJSON {
		return restStatus
	}
	return http.StatusOK
}

// rows are the rows of the README's "What clients see" table.
var rows = []struct {
	name  string
	check func(e *env)
}{
	{"first send", func(e *env) {
		m := e.msg("hi")
		all := e.run(m)
		if !all[0].IsTask() || all[len(all)-1].State != st.Completed {
			e.t.Errorf("first send: %v ... %v; want the task, completed", all[0], all[len(all)-1])
		}
		e.wantRuns(m, 1)
	}},
	{"retry of a finished task", func(e *env) {
		m := e.msg("hi")
		first := e.run(m)[0]
		again := e.run(m)
		if len(again) != 1 || !again[0].IsTask() || again[0].TaskID != first.TaskID || again[0].State != st.Completed {
			e.t.Errorf("retry: %v; want the task %s alone, completed", again, first.TaskID)
		}
		e.wantRuns(m, 1)
	}},
	{"retry of a running task", func(e *env) {
		m := e.msg("wait 1s live")
		done := make(chan []st.Answer, 1)
		go func() { done <- e.run(m) }()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		again := e.run(m)
		first := <-done
		if !again[0].IsTask() || again[0].TaskID != first[0].TaskID || again[0].State == st.Completed {
			e.t.Errorf("retry: %v; want task %s before it completed", again[0], first[0].TaskID)
		}
		if e.streaming {
			if last := again[len(again)-1]; last.State != st.Completed || time.Since(start) < 500*time.Millisecond {
				e.t.Errorf("streaming retry ended with %v after %v; want the completion, live", last, time.Since(start))
			}
		}
		e.wantRuns(m, 1)
	}},
	{"retry of a Message reply", func(e *env) {
		m := e.msg("reply hi")
		first, again := e.run(m)[0], e.run(m)
		if first.Kind != "message" || len(again) != 1 || again[0].Kind != "message" {
			e.t.Errorf("first %v, retry %v; want the Message both times", first, again)
		}
		e.wantRuns(m, 1)
	}},
	{"retry while the task is not known", func(e *env) {
		// The agent answers with a Message after 1.5 s: until then the key is pending
		// (it is bound once a task is stored, or to the Message). A retry, unary or
		// streaming, waits ReplayWait and gets 409.
		m := e.msg("wait 1500ms reply late")
		done := make(chan struct{})
		go func() { defer close(done); e.run(m) }()
		time.Sleep(100 * time.Millisecond)
		a := e.send(e.srv.url, m)
		<-done
		e.wantError(a, http.StatusConflict, -32000, "UNAVAILABLE", "still in flight")
		if a.RetryAfter == "" {
			e.t.Error("409 without Retry-After")
		}
		e.wantRuns(m, 1)
	}},
	{"retry after the task was deleted", func(e *env) {
		m := e.msg("hi")
		first := e.run(m)[0]
		e.srv.store.Delete(a2a.TaskID(first.TaskID))
		time.Sleep(lease + 100*time.Millisecond)
		status := e.errStatus(http.StatusNotFound)
		e.wantError(e.send(e.srv.url, m), status, -32001, "NOT_FOUND", "")
		e.wantRuns(m, 1)
	}},
	{"same key, different messageId", func(e *env) {
		m := e.msg("hi")
		e.run(m)
		other := m
		other.ID += "-other"
		status := e.errStatus(http.StatusBadRequest)
		e.wantError(e.send(e.srv.url, other), status, -32602, "INVALID_ARGUMENT", "already held")
		e.wantRuns(other, 0)
	}},
	{"malformed key", func(e *env) {
		status := e.errStatus(http.StatusBadRequest)
		for _, key := range []any{42, "short", strings.Repeat("k", 300)} {
			m := e.msg("hi")
			a, err := st.SendKey(context.Background(), e.srv.url, m, key)
			if err != nil {
				e.t.Fatal(err)
			}
			e.wantError(a, status, -32602, "INVALID_ARGUMENT", "")
			e.wantRuns(m, 0)
		}
	}},
	{"scope error", func(e *env) {
		m := e.msg("hi")
		m.Header = http.Header{"X-Scope": {"fail"}}
		status := e.errStatus(http.StatusBadRequest)
		e.wantError(e.send(e.srv.url, m), status, -32602, "INVALID_ARGUMENT", errScope.Error())
		e.wantRuns(m, 0)
	}},
	{"index cannot honour keys", func(e *env) {
		m := e.msg("hi")
		status := e.errStatus(http.StatusBadRequest)
		e.wantError(e.send(e.noIndex.url, m), status, -32004, "UNIMPLEMENTED", "cannot honour")
	}},
	{"index failed", func(e *env) {
		m := e.msg("hi")
		a := e.send(e.failClaim.url, m)
		e.wantError(a, http.StatusServiceUnavailable, -32000, "UNAVAILABLE", "unavailable")
		if a.RetryAfter == "" {
			e.t.Error("503 without Retry-After")
		}
	}},
	{"adapter could not bind", func(e *env) {
		// The adapter binds once the task is stored, after the agent started: the
		// client gets its task, and the key stays pending (never released).
		m := e.msg("hi")
		if a := e.send(e.failBind.url, m); !a.IsTask() {
			e.t.Errorf("send whose bind failed: %v; want its task", a)
		}
		e.wantRuns(m, 1)
		e.wantError(e.send(e.failBind.url, m), http.StatusConflict, -32000, "UNAVAILABLE", "still in flight")
		e.wantRuns(m, 1)
	}},
	{"body over MaxBodyBytes", func(e *env) {
		m := e.msg("hi")
		m.Pad = maxBody + 1
		e.wantError(e.send(e.srv.url, m), http.StatusRequestEntityTooLarge, -32600, "INVALID_ARGUMENT", "exceeds")
		e.wantRuns(m, 0)
	}},
}

func TestWhatClientsSee(t *testing.T) {
	t.Cleanup(func() {
		if err := st.Markers.Err(); err != nil {
			t.Error(err)
		}
	})
	for _, rt := range routers {
		t.Run(rt.name, func(t *testing.T) {
			t.Parallel()
			servers := func() *env {
				mem := memstore.New(memstore.Options{})
				return &env{
					srv:       startServer(t, rt, mem),
					noIndex:   startServer(t, rt, nil),
					failClaim: startServer(t, rt, failing(mem, testkit.OpClaim)),
					failBind:  startServer(t, rt, failing(memstore.New(memstore.Options{}), testkit.OpBind)),
				}
			}()
			for _, b := range st.Bindings {
				for _, streaming := range []bool{false, true} {
					mode := "unary"
					if streaming {
						mode = "streaming"
					}
					for _, row := range rows {
						t.Run(string(b)+"/"+mode+"/"+row.name, func(t *testing.T) {
							t.Parallel()
							e := *servers
							e.t, e.b, e.streaming = t, b, streaming
							row.check(&e)
						})
					}
				}
			}
		})
	}
}
