package faulttest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

type mode struct {
	binding   wireclient.Binding
	streaming bool
}

var modes = []mode{{wireclient.JSONRPC, false}, {wireclient.JSONRPC, true}, {wireclient.HTTPJSON, false}, {wireclient.HTTPJSON, true}}

func (m mode) String() string { return fmt.Sprintf("%s/streaming=%t", m.binding, m.streaming) }

// startKit starts an echo server behind the kit over ix, closed when t ends.
func startKit(t *testing.T, ix idempotency.KeyIndex, opts middleware.Options) *testkit.Running {
	t.Helper()
	return testkit.NewServer(t, testkit.Config{Agent: testkit.Echo(0), Index: ix, Middleware: opts})
}

// sendTwice sends s, and sends it again wait later while the first send is in
// flight; it returns both answers.
func sendTwice(t *testing.T, c *wireclient.Client, s wireclient.Send, wait time.Duration) (first, retry wireclient.Answer) {
	t.Helper()
	firstc := make(chan wireclient.Answer, 1)
	go func() { firstc <- do(t, c, s) }()
	time.Sleep(wait)
	retry = do(t, c, s)
	return <-firstc, retry
}

// wantOneRun fails t unless the agent of srv ran exactly once.
func wantOneRun(t *testing.T, srv *testkit.Running) {
	t.Helper()
	if n := srv.Runs(); n != 1 {
		t.Errorf("the agent ran %d times, want 1", n)
	}
}

var sends atomic.Int64

// newSend returns a send of mode m with a fresh message id, keyed when keyed.
func newSend(m mode, keyed bool) wireclient.Send {
	id := fmt.Sprintf("fault-%d", sends.Add(1))
	s := wireclient.Send{Binding: m.binding, Streaming: m.streaming, MessageID: id, Text: "hello " + id}
	if keyed {
		s.Key = idempotency.NewKey()
	}
	return s
}

// do sends s and returns the answer; it fails t when there is none. It is safe to
// call from other goroutines than the test's.
func do(t *testing.T, c *wireclient.Client, s wireclient.Send) wireclient.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := c.Do(ctx, s)
	if err != nil {
		t.Errorf("%s %s: %v", s.Binding, s.MessageID, err)
	}
	return a
}

// An index that fails, or hangs past the middleware's IndexTimeout, on claims: keyed
// sends are refused with 503 and Retry-After in the binding's error shape and nothing
// runs; unkeyed sends run as before.
func TestIndexUnavailable(t *testing.T) {
	for _, fault := range []string{"fail", "hang"} {
		t.Run(fault, func(t *testing.T) {
			ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			if fault == "fail" {
				ix.SetFail(testkit.OpClaim, true)
			} else {
				ix.SetHang(testkit.OpClaim, true)
			}
			srv := startKit(t, ix, middleware.Options{IndexTimeout: 100 * time.Millisecond})
			c := &wireclient.Client{BaseURL: srv.URL}
			for _, m := range modes {
				a := do(t, c, newSend(m, true))
				if a.Kind != wireclient.Unavailable || a.Status != 503 || a.RetryAfter <= 0 || !a.Extension {
					t.Errorf("%v keyed: got %v (Retry-After %v, extension %t); want 503 with Retry-After", m, a, a.RetryAfter, a.Extension)
				}
				if a.Reason != "SERVER_ERROR" {
					t.Errorf("%v keyed: reason %q, want SERVER_ERROR in the binding's error shape: %s", m, a.Reason, a.Raw)
				}
			}
			if n := srv.Runs(); n != 0 {
				t.Fatalf("the agent ran %d times for keyed sends the index did not claim", n)
			}
			for _, m := range modes {
				if a := do(t, c, newSend(m, false)); a.Kind != wireclient.Task {
					t.Errorf("%v unkeyed: got %v; want a task", m, a)
				}
			}
			if n := srv.Runs(); n != int64(len(modes)) {
				t.Errorf("the agent ran %d times for %d unkeyed sends", n, len(modes))
			}
		})
	}
}

// A bind that fails: the key binds once the task is stored, so the agent has run by
// then. The client gets its task; the key is never released (a retry must not run
// the agent again), and the engine binds it again in the background while it keeps
// the lease: retries are answered 409 with Retry-After, also long past the lease's
// length, and once the index heals they get the task. The agent runs once. (Before
// the rebind, the lease ended once the forward returned, and a retry then took the
// claim over and ran the agent again: CI's TestPostgresCutMidLoad saw it.)
func TestBindRetriedOnceIndexHeals(t *testing.T) {
	const lease = time.Second
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			srv := startKit(t, ix, middleware.Options{ReplayWait: -1, Lease: lease})
			c := &wireclient.Client{BaseURL: srv.URL}
			s := newSend(m, true)
			ix.SetFail(testkit.OpBind, true)
			first := do(t, c, s)
			if first.Kind != wireclient.Task {
				t.Fatalf("got %v, want the agent's task", first)
			}
			time.Sleep(2 * lease) // the lease would have ended, but for the rebind
			if a := do(t, c, s); a.Kind != wireclient.InFlight || a.RetryAfter <= 0 {
				t.Errorf("retry past the lease while binds fail: %v (Retry-After %v), want 409 with Retry-After", a, a.RetryAfter)
			}
			ix.SetFail(testkit.OpBind, false)
			deadline := time.Now().Add(10 * lease)
			for {
				a := do(t, c, s)
				if a.Kind == wireclient.Task {
					if a.TaskID != first.TaskID {
						t.Errorf("retry once the index healed: task %s, want %s", a.TaskID, first.TaskID)
					}
					break
				}
				if a.Kind != wireclient.InFlight || time.Now().After(deadline) {
					t.Fatalf("retry once the index healed: %v; want 409 until the key is bound, then the task", a)
				}
				time.Sleep(100 * time.Millisecond)
			}
			wantOneRun(t, srv)
		})
	}
}

// Two identical sends, the second while the first one's claim is pending (its bind
// takes 500ms), while lookups fail: whichever claims runs once, and the other, which
// waits and fails to look the key up, is refused with 503 and Retry-After.
func TestLookupFailsWhileRetryWaits(t *testing.T) {
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
			ix.SetDelay(testkit.OpBind, 500*time.Millisecond)
			ix.SetFail(testkit.OpLookup, true)
			srv := startKit(t, ix, middleware.Options{})
			c := &wireclient.Client{BaseURL: srv.URL}
			s := newSend(m, true)
			other, retry := sendTwice(t, c, s, 100*time.Millisecond)
			kinds := map[wireclient.Kind]int{retry.Kind: 1}
			kinds[other.Kind]++
			if kinds[wireclient.Task] != 1 || kinds[wireclient.Unavailable] != 1 {
				t.Errorf("answers %v and %v; want one task and one 503", retry, other)
			}
			for _, a := range []wireclient.Answer{retry, other} {
				if a.Kind == wireclient.Unavailable && a.RetryAfter <= 0 {
					t.Errorf("503 without Retry-After")
				}
			}
			wantOneRun(t, srv)
		})
	}
}

// A retry of a send whose agent answers with a Message, made while the agent is still
// working (the adapter has bound the key to the task id a2a-go generated, and records
// the Message only when the agent yields it): the retry must get the Message (or 409,
// in flight), never TaskNotFound, since no task will ever exist and the Message comes.
func TestRetryWhileMessageReplyIsRecorded(t *testing.T) {
	// The agent works 300ms before it answers.
	retryWhileAgentWorks(t, 300*time.Millisecond, 0, 100*time.Millisecond, "reply please", wireclient.Message)
}

// A retry of a send whose agent takes longer than the lease before its first event
// (a2a-go stores the task only then, while the adapter bound the key to the task's id
// before the agent started): the retry must get the task or 409 (in flight), never
// TaskNotFound, since the task is coming. Past the lease, the middleware learns that
// from a subscription to the running execution.
func TestRetryBeforeSlowFirstEvent(t *testing.T) {
	// The agent works 900ms before its first event.
	retryWhileAgentWorks(t, 900*time.Millisecond, 500*time.Millisecond, 600*time.Millisecond, "", wireclient.Task)
}

// retryWhileAgentWorks sends a keyed message in every mode (with text when not
// empty) to a server (middleware lease: lease, zero the default) whose agent works
// work before its first event or its reply, and retries it wait later: the first
// send must be answered want, and the retry the same answer or 409 (in flight),
// never TaskNotFound; the agent runs once.
func retryWhileAgentWorks(t *testing.T, work, lease, wait time.Duration, text string, want wireclient.Kind) {
	id := func(a wireclient.Answer) string { return a.TaskID }
	if want == wireclient.Message {
		id = func(a wireclient.Answer) string { return a.MessageID }
	}
	for _, m := range modes {
		t.Run(m.String(), func(t *testing.T) {
			srv := testkit.NewServer(t, testkit.Config{
				Agent:      &testkit.Agent{ReplyPrefix: "reply", OnRun: func(context.Context, *a2asrv.ExecutorContext) { time.Sleep(work) }},
				Index:      memstore.New(memstore.Options{}),
				Middleware: middleware.Options{Lease: lease},
			})
			c := &wireclient.Client{BaseURL: srv.URL}
			s := newSend(m, true)
			if text != "" {
				s.Text = text
			}
			f, retry := sendTwice(t, c, s, wait)
			if f.Kind != want {
				t.Fatalf("first attempt: %v", f)
			}
			if retry.Kind != wireclient.InFlight && (retry.Kind != want || id(retry) != id(f)) {
				t.Errorf("retry while the agent works: %v; want %v (or 409)", retry, f)
			}
			wantOneRun(t, srv)
		})
	}
}
