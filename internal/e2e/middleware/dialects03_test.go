package middleware_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// The middleware's tests in middleware/ hold each outcome to its answer in A2A
// v1.0's dialects. Here each v0.3 dialect (a2a-go v2's a2acompat/a2av0, server and
// client, which the library's go.mod cannot list) is held to the same dialect in
// v1.0: every scenario runs once through each, on a fresh harness, and the two must
// observe the same thing, from the middleware's decision to what reached the client.

// observation is what a scenario's checked send came to.
type observation struct {
	outcome    middleware.Outcome
	status     int  // the HTTP status of the answer
	retryAfter bool // the answer carried Retry-After
	result     string
	runs       int64 // the agent's runs in the whole scenario
}

// resultOf names what the client got: a task in its state, a Message, or an error.
func resultOf(evs []a2a.Event, err error) string {
	switch {
	case err != nil:
		return "error"
	case len(evs) == 0:
		return "nothing"
	}
	if msg, ok := evs[0].(*a2a.Message); ok {
		return "message " + msg.Parts[0].Text()
	}
	return "task " + string(mwtest.FinalState(evs))
}

// scenario03 drives a harness into one situation: run makes the sends that lead up
// to it through c (other, when a send must come through the other version of the
// dialect), calls mark just before the checked send, and returns that send's result.
type scenario03 struct {
	name string
	cfg  func(*mwtest.Config)
	run  func(t *testing.T, h *mwtest.Harness, m, other mwtest.Mode, mark func()) ([]a2a.Event, error)
}

// sendAs sends msg through a client of m's dialect.
func sendAs(h *mwtest.Harness, m mwtest.Mode, msg *a2a.Message) ([]a2a.Event, error) {
	return mwtest.Send(context.Background(), h.Client(m.Dialect, "", ""), m.Streaming, &a2a.SendMessageRequest{Message: msg})
}

// retried sends a keyed message with text through first, then calls mark and
// returns the result of its retry through m.
func retried(t *testing.T, h *mwtest.Harness, first, m mwtest.Mode, text string, mark func()) ([]a2a.Event, error) {
	t.Helper()
	msg := mwtest.KeyedMessage(t, idempotency.NewKey(), text)
	if _, err := sendAs(h, first, msg); err != nil {
		t.Fatal(err)
	}
	mark()
	return sendAs(h, m, msg)
}

var scenarios03 = []scenario03{
	{name: "first send", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		mark()
		return sendAs(h, m, mwtest.KeyedMessage(t, idempotency.NewKey(), "echo first"))
	}},
	{name: "retry", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		return retried(t, h, m, m, "echo retried", mark)
	}},
	{name: "retry of a send made in the other version", run: func(t *testing.T, h *mwtest.Harness, m, other mwtest.Mode, mark func()) ([]a2a.Event, error) {
		return retried(t, h, other, m, "echo across versions", mark)
	}},
	{name: "retry of a Message reply", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		return retried(t, h, m, m, "reply once", mark)
	}},
	{name: "malformed key", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo malformed"))
		msg.Metadata = map[string]any{idempotency.MetadataKey: "short"}
		mark()
		return sendAs(h, m, msg)
	}},
	{name: "key reused by another message", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		key := idempotency.NewKey()
		if _, err := sendAs(h, m, mwtest.KeyedMessage(t, key, "echo one")); err != nil {
			t.Fatal(err)
		}
		mark()
		return sendAs(h, m, mwtest.KeyedMessage(t, key, "echo another"))
	}},
	{name: "index unavailable", cfg: func(c *mwtest.Config) {
		ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
		ix.SetFailAll(true)
		c.Index = ix
	}, run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		mark()
		return sendAs(h, m, mwtest.KeyedMessage(t, idempotency.NewKey(), "echo must not run"))
	}},
	{name: "no index", cfg: func(c *mwtest.Config) { c.NoIndex = true }, run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		mark()
		return sendAs(h, m, mwtest.KeyedMessage(t, idempotency.NewKey(), "echo must not run"))
	}},
	{name: "retry while the first is in flight", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "hold before the task")
		first := make(chan error, 1)
		go func() { _, err := sendAs(h, m, msg); first <- err }()
		mwtest.Within(t, h.Agent.Started, "the first run")
		mark()
		evs, err := sendAs(h, m, msg)
		h.ReleaseAgents()
		mwtest.Within(t, first, "the first send")
		return evs, err
	}},
	{name: "retry after the agent failed before its task", run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "fail first")
		if _, err := sendAs(h, m, msg); err == nil {
			t.Fatal("the failing first send succeeded")
		}
		h.EventAt(0) // the first send is settled (released) before the retry
		mark()
		return sendAs(h, m, msg)
	}},
	{name: "retry after the task was deleted", cfg: func(c *mwtest.Config) { c.Opts.Lease = deletedLease }, run: func(t *testing.T, h *mwtest.Harness, m, _ mwtest.Mode, mark func()) ([]a2a.Event, error) {
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo then forget")
		evs, err := sendAs(h, m, msg)
		if err != nil {
			t.Fatal(err)
		}
		// Once the execution has ended (a2a-go serves a subscription from a running
		// execution, not from the store), delete the task.
		mwtest.WaitInactive(t, h.Client(m.Dialect, "", ""), mwtest.TaskOf(evs[0]))
		h.Store.Delete(mwtest.TaskOf(evs[0]))
		time.Sleep(deletedLease)
		mark()
		return sendAs(h, m, msg)
	}},
}

// deletedLease is the lease of the scenario that deletes a task.
const deletedLease = 300 * time.Millisecond

// v10 is m's dialect in A2A v1.0.
func v10(m mwtest.Mode) mwtest.Mode {
	d := mwtest.JSONRPC10
	if m.Binding == mwtest.REST10.Binding {
		d = mwtest.REST10
	}
	return mwtest.Mode{Dialect: d, Streaming: m.Streaming}
}

func TestV03DialectsAnswerAsV10(t *testing.T) {
	observe := func(t *testing.T, sc scenario03, m, other mwtest.Mode) observation {
		t.Helper()
		cfg := mwtest.Config{Opts: middleware.Options{ReplayWait: 100 * time.Millisecond}}
		if sc.cfg != nil {
			sc.cfg(&cfg)
		}
		h := newHarness(t, cfg)
		var events int
		mark := func() {
			events = len(h.Events())
		}
		evs, err := sc.run(t, h, m, other, mark)
		x := h.Wire.Last()
		return observation{
			outcome:    h.EventAt(events).Outcome,
			status:     x.Status,
			retryAfter: x.Header.Get("Retry-After") != "",
			result:     resultOf(evs, err),
			runs:       h.Agent.Runs(),
		}
	}
	for _, m := range mwtest.ModesOf(jsonrpc03, rest03) {
		for _, sc := range scenarios03 {
			t.Run(m.String()+"/"+sc.name, func(t *testing.T) {
				want := observe(t, sc, v10(m), m)
				got := observe(t, sc, m, v10(m))
				if want.outcome == "" || got != want {
					t.Fatalf("%s observed %+v, %s observed %+v", m, got, v10(m), want)
				}
			})
		}
	}
}
