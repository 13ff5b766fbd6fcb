package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// Each outcome is driven on the real a2a-go server, and checked against what the
// client received: the HTTP status and the body on the wire, and the error a2a-go's
// client made of it. A client that leaves gets nothing, and the send is abandoned,
// whatever it was doing then.

// signalIndex is the test kit's faulty index over a memstore index that tells when
// a Claim starts and when a retry finds the key held by the same message (it is
// about to wait), so that a client can leave at a known point.
type signalIndex struct {
	*testkit.FaultyIndex
	claiming, waiting chan struct{}
}

// faulty sets a harness configuration's index to a new signalIndex.
func faulty(c *mwtest.Config) *signalIndex {
	ix := &signalIndex{FaultyIndex: testkit.NewFaultyIndex(memstore.New(memstore.Options{})),
		claiming: make(chan struct{}, 1), waiting: make(chan struct{}, 1)}
	c.Index = ix
	return ix
}

// Lookup signals waiting too: while this process runs the first attempt's forward,
// a retry reads the record instead of claiming.
func (ix *signalIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	rec, found, err := ix.FaultyIndex.Lookup(ctx, scope, key)
	if err == nil && found && rec.Pending() {
		signal(ix.waiting)
	}
	return rec, found, err
}

func (ix *signalIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	signal(ix.claiming)
	c, err := ix.FaultyIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.HeldBySameMessage {
		signal(ix.waiting)
	}
	return c, err
}

// signal sends on ch unless a signal is already waiting there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// brokenTasks is a TaskSource whose tasks are not JSON.
type brokenTasks struct{}

func (brokenTasks) ReadTask(context.Context, *http.Request, string, string) ([]byte, error) {
	return []byte(`{"id":`), nil
}

// answer is what the client of a keyed send should receive.
type answer struct {
	ok         bool   // a result
	rpcCode    int    // a JSON-RPC error with this code (or, when 0 and !ok, any error)
	status     int    // the HTTP status on JSON-RPC (default 200) and HTTP+JSON
	restStatus int    // the HTTP status on HTTP+JSON, when it differs from status
	contains   string // in the body
	retryAfter bool
	clientErr  error // errors.Is the client's error
	nothing    bool  // the client went away and got no answer
	ownError   bool  // the wrapped server's own error, passed on
}

// check checks that the client's last exchange, the answer the middleware wrote and
// the client's error are a. m marks where the checked send starts.
func (a answer) check(t *testing.T, h *mwtest.Harness, m mwtest.Mode, err error, at marks) {
	t.Helper()
	xs := h.Wire.Exchanges()
	if a.nothing {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("client error %v, want context.Canceled", err)
		}
		// A stream's headers may have gone out before the client left; no event did.
		if len(xs) > at.wire && (!m.Streaming || xs[at.wire].Status != http.StatusOK || strings.Contains(xs[at.wire].RespBody.String(), "data:")) {
			x := xs[at.wire]
			t.Fatalf("the client that left got an answer: HTTP %d %s", x.Status, x.RespBody)
		}
		return
	}
	if len(xs) <= at.wire {
		t.Fatalf("no answer on the wire (client error %v)", err)
	}
	x := xs[at.wire]
	// The body as the middleware wrote it: a2a-go's JSON-RPC client does not read
	// the body of an answer that is not 200.
	served := h.Answered.Answers()[at.served]
	body := served.Body.String()
	if served.Code() != x.Status {
		t.Fatalf("the middleware answered %d, the client got %d", served.Code(), x.Status)
	}
	if a.ownError {
		checkOwnError(t, m, x, body)
		if err == nil {
			t.Fatal("the client got no error")
		}
		return
	}
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	if m.Binding == "HTTP+JSON" && a.restStatus != 0 {
		status = a.restStatus
	}
	if x.Status != status {
		t.Fatalf("HTTP %d %s, want %d", x.Status, body, status)
	}
	if a.ok != (err == nil) {
		t.Fatalf("client error %v, want a result: %v", err, a.ok)
	}
	if a.clientErr != nil && !errors.Is(err, a.clientErr) {
		t.Fatalf("client error %v, want %v", err, a.clientErr)
	}
	if m.Binding == "JSONRPC" && a.rpcCode != 0 {
		var env struct {
			Error struct{ Code int } `json:"error"`
		}
		// A streamed JSON-RPC error is one Server-Sent Event.
		if json.Unmarshal([]byte(eventData(body)), &env) != nil || env.Error.Code != a.rpcCode {
			t.Fatalf("body %s, want JSON-RPC error %d", body, a.rpcCode)
		}
	}
	if !strings.Contains(body, a.contains) {
		t.Fatalf("body %s does not contain %q", body, a.contains)
	}
	if got := x.Header.Get("Retry-After") != ""; got != a.retryAfter {
		t.Fatalf("Retry-After %q, want one: %v", x.Header.Get("Retry-After"), a.retryAfter)
	}
}

// checkMarker checks the replay marker of the checked answer, by its outcome: on the
// answers served from a first attempt (a replay, the task gone, the reply not
// replayable), on no other.
func checkMarker(t *testing.T, h *mwtest.Harness, at marks, o middleware.Outcome, nothing bool) {
	t.Helper()
	if nothing {
		return
	}
	want := o == middleware.OutcomeReplayed || o == middleware.OutcomeTaskGone || o == middleware.OutcomeUnreplayable
	x := h.Wire.Exchanges()[at.wire]
	if got := x.Header.Get(idempotency.ReplayedHeader) == "true"; got != want {
		t.Fatalf("outcome %s: %s: true is %v, want %v", o, idempotency.ReplayedHeader, got, want)
	}
}

// marks are the counts of exchanges, answers and events before a checked send.
type marks struct{ wire, served, events int }

// outcomeCase drives the harness into one outcome: run makes the keyed sends the
// case needs, calls mark just before the one checked, and returns its client error.
type outcomeCase struct {
	name string
	cfg  func(*mwtest.Config)
	run  func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error
	want middleware.Outcome
	got  answer
	// event checks more of the checked send's Event.
	event func(t *testing.T, h *mwtest.Harness, e middleware.Event)
	// unary runs the case on unary sends only.
	unary bool
}

func echoSend(ctx context.Context, h *mwtest.Harness, m mwtest.Mode, msg *a2a.Message) error {
	_, err := mwtest.Send(ctx, h.Client(m.Dialect, "", ""), m.Streaming, &a2a.SendMessageRequest{Message: msg})
	return err
}

// freshSend is the checked send of a case that needs no other: "echo" with a new key.
func freshSend(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
	mark()
	return echoSend(context.Background(), h, m, mwtest.KeyedMessage(t, idempotency.NewKey(), "echo"))
}

var outcomeCases = []outcomeCase{
	{
		name: "claimed",
		run:  freshSend,
		want: middleware.OutcomeClaimed,
		got:  answer{ok: true, contains: "echo: echo"},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.BoundBy != middleware.BoundByAnswer || e.IndexTime <= 0 || e.WaitTime != 0 || e.ReplayTime != 0 {
				t.Errorf("event %+v: want bound by the answer, index time only", e)
			}
		},
	},
	{
		name: "claimed/adapter",
		cfg:  func(c *mwtest.Config) { c.Adapter = true },
		run:  freshSend,
		want: middleware.OutcomeClaimed,
		got:  answer{ok: true, contains: "echo: echo"},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.BoundBy != middleware.BoundByAdapter {
				t.Errorf("event %+v: want bound by the adapter", e)
			}
		},
	},
	{
		name: "released",
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			mark()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "fail first")
			err := echoSend(context.Background(), h, m, msg)
			// Released: the retry runs the send again.
			if err := echoSend(context.Background(), h, m, msg); err != nil || h.Agent.RunsOf(msg.ID) != 2 {
				t.Errorf("retry after the release: %v, %d runs; want a second run", err, h.Agent.RunsOf(msg.ID))
			}
			return err
		},
		want: middleware.OutcomeReleased,
		got:  answer{ok: true, contains: "echo: fail first"}, // the retry's answer, checked last
	},
	{
		name: "failed",
		cfg:  func(c *mwtest.Config) { faulty(c).SetFail(testkit.OpRelease, true) },
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			mark()
			return echoSend(context.Background(), h, m, mwtest.KeyedMessage(t, idempotency.NewKey(), "fail first"))
		},
		want: middleware.OutcomeFailed,
		got:  answer{ownError: true},
	},
	{
		name: "replayed",
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo twice")
			if err := echoSend(context.Background(), h, m, msg); err != nil {
				t.Fatal(err)
			}
			mark()
			return echoSend(context.Background(), h, m, msg)
		},
		want: middleware.OutcomeReplayed,
		got:  answer{ok: true, contains: "echo: echo twice"},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.BoundBy != middleware.BoundByNone || e.ReplayTime <= 0 || e.IndexTime <= 0 {
				t.Errorf("event %+v: want replay and index time, bound by none", e)
			}
		},
	},
	{
		name: "in_flight",
		cfg:  func(c *mwtest.Config) { c.Opts.ReplayWait = 20 * time.Millisecond },
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "hold")
			go echoSend(context.Background(), h, m, msg)
			mwtest.Within(t, h.Agent.Started, "first attempt")
			mark()
			return echoSend(context.Background(), h, m, msg) // the harness releases the agent at the end
		},
		want: middleware.OutcomeInFlight,
		got:  answer{status: http.StatusConflict, rpcCode: -32000, contains: "still in flight", retryAfter: true},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			// ReplayWait runs from before the claim, so the wait may be a little shorter.
			if e.WaitTime < 10*time.Millisecond {
				t.Errorf("event %+v: want a wait time of about ReplayWait (20ms)", e)
			}
		},
	},
	{
		name: "conflict",
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			key := idempotency.NewKey()
			if err := echoSend(context.Background(), h, m, mwtest.KeyedMessage(t, key, "echo")); err != nil {
				t.Fatal(err)
			}
			mark()
			return echoSend(context.Background(), h, m, mwtest.KeyedMessage(t, key, "echo another"))
		},
		want: middleware.OutcomeConflict,
		got:  answer{restStatus: http.StatusBadRequest, rpcCode: -32602, contains: "already held", clientErr: a2a.ErrInvalidParams},
	},
	{
		name: "refused",
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo"))
			msg.Metadata = map[string]any{idempotency.MetadataKey: "short"}
			mark()
			return echoSend(context.Background(), h, m, msg)
		},
		want: middleware.OutcomeRefused,
		got:  answer{restStatus: http.StatusBadRequest, rpcCode: -32602, clientErr: a2a.ErrInvalidParams},
	},
	{
		name: "unsupported",
		cfg:  func(c *mwtest.Config) { c.NoIndex = true },
		run:  freshSend,
		want: middleware.OutcomeUnsupported,
		got:  answer{restStatus: http.StatusBadRequest, rpcCode: -32004, contains: "cannot honour", clientErr: a2a.ErrUnsupportedOperation},
	},
	{
		name: "unavailable",
		cfg:  func(c *mwtest.Config) { c.Index = failingIndex() },
		run:  freshSend,
		want: middleware.OutcomeUnavailable,
		got:  answer{status: http.StatusServiceUnavailable, rpcCode: -32000, contains: "unavailable", retryAfter: true},
	},
	{
		// The adapter binds once the task is stored, so the agent has run when the
		// bind fails: the client gets its answer, and the key stays pending (the
		// middleware's own bind from the answer fails too).
		name:  "claimed/adapter-bind-failed",
		unary: true,
		cfg: func(c *mwtest.Config) {
			faulty(c).SetFail(testkit.OpBind, true)
			c.Adapter = true
		},
		run:  freshSend,
		want: middleware.OutcomeClaimed,
		got:  answer{ok: true, contains: "echo: echo"},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if h.Agent.Runs() != 1 || e.BoundBy != middleware.BoundByNone {
				t.Errorf("event %+v, %d runs: want the agent run once and nothing bound", e, h.Agent.Runs())
			}
			// The adapter's log line names the send as the middleware's lines do.
			var adapterLine string
			for line := range strings.Lines(h.Logs.String()) {
				if strings.Contains(line, "adapter: could not bind the idempotency key") {
					adapterLine = line
				}
			}
			if !strings.Contains(adapterLine, "request_id="+e.RequestID+" ") {
				t.Errorf("the adapter's line %q does not name request_id %s", adapterLine, e.RequestID)
			}
		},
	},
	{
		name: "task_gone",
		cfg:  func(c *mwtest.Config) { c.Opts.Lease = 20 * time.Millisecond },
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo to be deleted")
			claimed := time.Now()
			first, err := mwtest.Send(context.Background(), h.Client(m.Dialect, "", ""), m.Streaming, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatal(err)
			}
			mwtest.WaitInactive(t, h.Client(m.Dialect, "", ""), mwtest.TaskOf(first[0]))
			h.Store.Delete(mwtest.TaskOf(first[0]))
			time.Sleep(time.Until(claimed.Add(20 * time.Millisecond))) // the claim is older than its lease
			mark()
			return echoSend(context.Background(), h, m, msg)
		},
		want: middleware.OutcomeTaskGone,
		got:  answer{restStatus: http.StatusNotFound, rpcCode: -32001, contains: "not found", clientErr: a2a.ErrTaskNotFound},
	},
	{
		name: "internal",
		cfg: func(c *mwtest.Config) {
			c.Tasks = func(*mwtest.Harness) middleware.TaskSource { return brokenTasks{} }
		},
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo")
			first, err := mwtest.Send(context.Background(), h.Client(m.Dialect, "", ""), m.Streaming, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatal(err)
			}
			// A streaming retry of a running execution follows it instead of reading.
			mwtest.WaitInactive(t, h.Client(m.Dialect, "", ""), mwtest.TaskOf(first[0]))
			mark()
			return echoSend(context.Background(), h, m, msg)
		},
		want: middleware.OutcomeInternal,
		got:  answer{restStatus: http.StatusInternalServerError, rpcCode: -32603, contains: "could not be answered"},
	},
	{
		name: "abandoned/index",
		cfg: func(c *mwtest.Config) {
			faulty(c).SetHang(testkit.OpClaim, true) // until the client leaves
			c.Opts.IndexTimeout = time.Minute
		},
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			return cancelWhen(t, h, m, mark, h.Index.(*signalIndex).claiming, "echo")
		},
		want: middleware.OutcomeAbandoned,
		got:  answer{nothing: true},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.IndexTime <= 0 {
				t.Errorf("event %+v: want the index time of the hanging claim", e)
			}
		},
	},
	{
		// The forward goes on without the client until the answer binds the key; the
		// client got nothing.
		name: "abandoned/forward",
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			err := cancelWhen(t, h, m, mark, h.Agent.Started, "hold")
			// The agent answers once the server has seen the client leave.
			answers := h.Answered.Answers()
			mwtest.Within(t, answers[len(answers)-1].Left, "the server seeing the client leave")
			h.ReleaseAgents()
			return err
		},
		want: middleware.OutcomeAbandoned,
		got:  answer{nothing: true},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.BoundBy != middleware.BoundByAnswer {
				t.Errorf("event %+v: want the key bound by the answer that came after the client left", e)
			}
		},
	},
	{
		name: "abandoned/replay-wait",
		cfg: func(c *mwtest.Config) {
			faulty(c)
			c.Opts.ReplayWait = time.Minute
		},
		run: func(t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func()) error {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "hold")
			go echoSend(context.Background(), h, m, msg)
			mwtest.Within(t, h.Agent.Started, "first attempt")
			return cancelWhenMsg(t, h, m, mark, h.Index.(*signalIndex).waiting, msg)
		},
		want: middleware.OutcomeAbandoned,
		got:  answer{nothing: true},
		event: func(t *testing.T, h *mwtest.Harness, e middleware.Event) {
			if e.WaitTime <= 0 {
				t.Errorf("event %+v: want a wait time", e)
			}
		},
	},
}

// cancelWhen sends a keyed message with text and cancels it when signal fires.
func cancelWhen[T any](t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func(), signal <-chan T, text string) error {
	return cancelWhenMsg(t, h, m, mark, signal, mwtest.KeyedMessage(t, idempotency.NewKey(), text))
}

func cancelWhenMsg[T any](t *testing.T, h *mwtest.Harness, m mwtest.Mode, mark func(), signal <-chan T, msg *a2a.Message) error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	mark()
	go func() { done <- echoSend(ctx, h, m, msg) }()
	mwtest.Within(t, signal, "the point to leave at")
	cancel()
	return mwtest.Within(t, done, "the cancelled send")
}

func TestOutcomesMatchWhatTheClientGot(t *testing.T) {
	for _, m := range mwtest.Modes {
		for _, oc := range outcomeCases {
			t.Run(m.String()+"/"+oc.name, func(t *testing.T) {
				if oc.unary && m.Streaming {
					t.Skip("a unary case")
				}
				cfg := mwtest.Config{Served: true}
				if oc.cfg != nil {
					oc.cfg(&cfg)
				}
				h := mwtest.New(t, cfg)
				var at marks
				mark := func() {
					at.wire, at.served = len(h.Wire.Exchanges()), len(h.Answered.Answers())
					at.events = len(h.Events())
				}
				err := oc.run(t, h, m, mark)
				e := h.EventAt(at.events)
				if oc.name == "released" {
					// The retry may be observed before the first attempt it waited for.
					if other := h.EventAt(at.events + 1); other.Outcome == oc.want {
						e, other = other, e
					}
				}
				if e.Outcome != oc.want {
					t.Fatalf("observed %q, want %q (client error %v)", e.Outcome, oc.want, err)
				}
				if oc.name == "released" {
					// The checked answer is the first attempt's, before the retry's.
					checkReleased(t, h, m, at, e)
				} else {
					oc.got.check(t, h, m, err, at)
					checkMarker(t, h, at, e.Outcome, oc.got.nothing)
				}
				if string(e.Binding) != m.Binding || string(e.Version) != m.Version || e.Streaming != m.Streaming || e.RequestID == "" {
					t.Errorf("event %+v: want %s and a request id", e, m)
				}
				if oc.event != nil {
					oc.event(t, h, e)
				}
			})
		}
	}
}

// eventData returns the data of the first Server-Sent Event in body, or body when
// it is not a stream.
func eventData(body string) string {
	for line := range strings.Lines(body) {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data
		}
	}
	return body
}

// checkOwnError checks that x, with the body the middleware wrote, is a2a-go's
// own error for the agent's failure, as a2a-go answers it: a JSON-RPC error, an
// HTTP+JSON error status, or on a stream one event carrying the error; no Retry-After.
func checkOwnError(t *testing.T, m mwtest.Mode, x *mwtest.WireExchange, body string) {
	t.Helper()
	wantStatus := x.Status == http.StatusOK
	if m.Binding == "HTTP+JSON" && !m.Streaming {
		wantStatus = x.Status >= 400
	}
	if !wantStatus || !strings.Contains(eventData(body), `"error"`) || !strings.Contains(body, "agent failed") {
		t.Fatalf("HTTP %d %s, want a2a-go's error for the agent's failure", x.Status, body)
	}
	if x.Header.Get("Retry-After") != "" {
		t.Fatalf("Retry-After %q on the server's own error", x.Header.Get("Retry-After"))
	}
}

// checkReleased checks the first attempt of the released case: the server's own
// error, and no key bound.
func checkReleased(t *testing.T, h *mwtest.Harness, m mwtest.Mode, at marks, e middleware.Event) {
	t.Helper()
	checkOwnError(t, m, h.Wire.Exchanges()[at.wire], h.Answered.Answers()[at.served].Body.String())
	if e.BoundBy != middleware.BoundByNone {
		t.Errorf("event %+v: a released key bound", e)
	}
}

// Every log line of one keyed send names the same request_id and the same redacted
// key, at every level, and the line that decides the send names its outcome: a grep
// for either follows the send from claim to bind or release.
func TestLogLinesFollowOneSend(t *testing.T) {
	var logs testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{Logger: logger}})
	key := idempotency.NewKey()
	msg := mwtest.KeyedMessage(t, key, "fail first")
	const id = "req-7f3a9c1e"
	hc := &http.Client{Transport: headerTransport{base: h.HTTP.Transport, name: "X-Request-Id", value: id}}
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(h.Server.URL+"/jsonrpc", a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err == nil {
		t.Fatal("the failing send succeeded")
	}
	// And one without X-Request-Id: the middleware makes one up.
	if err := echoSend(context.Background(), h, mwtest.Mode{Dialect: mwtest.JSONRPC10}, msg); err != nil {
		t.Fatal(err)
	}
	h.ExpectOutcomes(middleware.OutcomeReleased, middleware.OutcomeClaimed)

	bySend := map[string][]map[string]any{}
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["key"] != idempotency.RedactKey(key) {
			t.Errorf("log line with key %v, want the redacted %q: %s", rec["key"], idempotency.RedactKey(key), line)
		}
		if strings.Contains(line, key) {
			t.Errorf("the full key is logged: %s", line)
		}
		rid, _ := rec["request_id"].(string)
		bySend[rid] = append(bySend[rid], rec)
	}
	if len(bySend) != 2 || bySend[id] == nil || bySend[""] != nil {
		t.Fatalf("log lines by request_id: %v; want two sends, one of them %q", slices.Collect(maps.Keys(bySend)), id)
	}
	for rid, recs := range bySend {
		msgs := make([]string, len(recs))
		for i, r := range recs {
			msgs[i] = r["msg"].(string)
		}
		if len(recs) < 2 || !strings.Contains(msgs[0], "claimed") {
			t.Errorf("send %s: lines %q, want the claim first", rid, msgs)
		}
		last := recs[len(recs)-1]
		want := "claimed"
		if rid == id {
			want = "released"
		}
		if last["outcome"] != want || last["msg"] != "idempotency: keyed send done" {
			t.Errorf("send %s: last line %v, want the end of the send with outcome %s", rid, last, want)
		}
		for _, r := range recs {
			if o, ok := r["outcome"]; ok && o != want {
				t.Errorf("send %s: a line names outcome %v, want %s", rid, o, want)
			}
		}
	}
}

// headerTransport sets one request header.
type headerTransport struct {
	base        http.RoundTripper
	name, value string
}

func (ht headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(ht.name, ht.value)
	return ht.base.RoundTrip(r)
}
