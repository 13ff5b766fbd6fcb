// Package a2atest runs a real a2a-go server for the adapter's tests: a controllable
// agent, the a2a-go JSON-RPC and HTTP+JSON handlers with a task store the test can
// read, an agent card, and a proxy that loses responses.
package a2atest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
)

// Agent is an a2asrv.AgentExecutor whose behaviour a test controls. The zero value
// creates a task, reports it working, adds an artifact and completes it.
type Agent struct {
	// ReplyMessage makes the agent answer a new send with a Message instead of a task.
	ReplyMessage bool
	// AskFirst makes a new task end in INPUT_REQUIRED instead of COMPLETED, so that a
	// follow-up can be sent to it; the follow-up then completes the task.
	AskFirst bool
	// Hold, when not nil, makes the agent wait until it receives from Hold (a close
	// releases every run, a send one run) or the execution's context ends: a task
	// agent waits after reporting WORKING, a Message agent before replying.
	Hold chan struct{}
	// Started, when not nil, receives the task id each time the agent starts. It must
	// be buffered or read, or the agent blocks.
	Started chan a2a.TaskID

	runs atomic.Int64
}

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// Runs returns how many times the agent started.
func (a *Agent) Runs() int64 { return a.runs.Load() }

// Execute implements a2asrv.AgentExecutor.
func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.runs.Add(1)
		if a.Started != nil {
			a.Started <- ec.TaskID
		}
		hold := func() bool {
			if a.Hold == nil {
				return true
			}
			select {
			case <-a.Hold:
				return true
			case <-ctx.Done():
				return false
			}
		}
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		if ec.StoredTask == nil && a.ReplyMessage {
			if !hold() {
				return
			}
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("reply: "+text))
			reply.ContextID = ec.ContextID
			yield(reply, nil)
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
		if !hold() {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		final := a2a.TaskStateCompleted
		if ec.StoredTask == nil && a.AskFirst {
			final = a2a.TaskStateInputRequired
		}
		yield(a2a.NewStatusUpdateEvent(ec, final, nil), nil)
	}
}

// Cancel implements a2asrv.AgentExecutor.
func (a *Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// ServerOptions configure [NewServer].
type ServerOptions struct {
	// Wrap, when set, is put in front of the whole server (card and endpoints): the
	// kit's middleware.
	Wrap func(http.Handler) http.Handler
	// Extensions are listed in the card's capabilities.extensions.
	Extensions []a2a.AgentExtension
	// HandlerOptions are passed to a2asrv.NewHandler after the task store.
	HandlerOptions []a2asrv.RequestHandlerOption
}

// Server is a running a2a-go server.
type Server struct {
	// URL is the server's base URL; the card is at URL + a2asrv.WellKnownAgentCardPath.
	URL string
	// Card is the card the server serves, with a JSON-RPC and an HTTP+JSON interface.
	Card *a2a.AgentCard
	// Store is the handler's task store.
	Store taskstore.Store
}

// NewServer starts an a2a-go server for exec: the JSON-RPC binding at /jsonrpc (listed
// first in the card), HTTP+JSON at /rest, the card at the well-known path. It is
// closed when the test ends.
func NewServer(t testing.TB, exec a2asrv.AgentExecutor, opts ServerOptions) *Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	card := &a2a.AgentCard{
		Name:        "test agent",
		Description: "a controllable agent",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, Extensions: opts.Extensions},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
	store := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})
	handler := a2asrv.NewHandler(exec, append([]a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(store)}, opts.HandlerOptions...)...)

	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	var h http.Handler = mux
	if opts.Wrap != nil {
		h = opts.Wrap(mux)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return &Server{URL: base, Card: card, Store: store}
}

// Proxy forwards requests to a server. The POST requests it is told to lose are
// forwarded in full, and the proxy waits for the upstream response; it then drops
// the connection to the client without answering, or, for a response that is an
// event stream, after passing on its first event.
type Proxy struct {
	// URL is the proxy's base URL, to be used in place of the server's.
	URL string

	mu    sync.Mutex
	posts int
	lose  func(n int) bool
}

// NewProxy starts a proxy in front of target (a base URL). lose is called with the
// 1-based number of each POST request and reports whether to lose its response. The
// proxy rewrites the URLs of the agent card it passes on to point at itself. It is
// closed when the test ends.
func NewProxy(t testing.TB, target string, lose func(n int) bool) *Proxy {
	t.Helper()
	upstream, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	p := &Proxy{URL: "http://" + srv.Listener.Addr().String(), lose: lose}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Host = upstream.Host
		},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method != http.MethodGet || !strings.HasSuffix(resp.Request.URL.Path, a2asrv.WellKnownAgentCardPath) {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			body = bytes.ReplaceAll(body, []byte(target), []byte(p.URL))
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !p.loses() {
			rp.ServeHTTP(w, r)
			return
		}
		p.forwardAndDrop(w, r, upstream)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// Posts returns how many POST requests reached the proxy.
func (p *Proxy) Posts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posts
}

func (p *Proxy) loses() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posts++
	return p.lose(p.posts)
}

// forwardAndDrop sends r upstream, waits for the response, and drops the client's
// connection: at once for a unary response, after the first event of a stream.
func (p *Proxy) forwardAndDrop(w http.ResponseWriter, r *http.Request, upstream *url.URL) {
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = upstream.Scheme, upstream.Host, upstream.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err == nil {
		defer resp.Body.Close()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			passFirstEvent(w, resp)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// passFirstEvent writes the response's headers and its first SSE event to w.
func passFirstEvent(w http.ResponseWriter, resp *http.Response) {
	var event bytes.Buffer
	buf := make([]byte, 1)
	for !bytes.HasSuffix(event.Bytes(), []byte("\n\n")) {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
		event.WriteByte(buf[0])
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(event.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// ErrInjected is the error a [FaultyIndex] fails with.
var ErrInjected = errors.New("a2atest: injected index failure (storage unreachable)")

// FaultyIndex is a KeyIndex that passes calls to a real index, and fails the calls
// the test asks it to fail with [ErrInjected].
type FaultyIndex struct {
	idempotency.KeyIndex
	// FailBinds makes every Bind fail while it is set.
	FailBinds atomic.Bool
	// FailClaims is how many of the next Claims fail.
	FailClaims atomic.Int64
}

// Claim fails while FailClaims is positive, counting it down.
func (f *FaultyIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if f.FailClaims.Add(-1) >= 0 {
		return idempotency.Claim{}, ErrInjected
	}
	return f.KeyIndex.Claim(ctx, scope, key, messageID, lease)
}

// Bind fails while FailBinds is set.
func (f *FaultyIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if f.FailBinds.Load() {
		return ErrInjected
	}
	return f.KeyIndex.Bind(ctx, scope, key, token, b)
}

// WaitFor calls cond until it reports true, and fails the test when it has not after
// 10 seconds. It synchronizes a test with the server's background work; it asserts
// nothing about how long the work takes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

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
