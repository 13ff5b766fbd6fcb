package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

type streamItem struct {
	ev  a2a.Event
	err error
}

// stream runs a streaming send in a goroutine and delivers its events.
func stream(ctx context.Context, c *a2aclient.Client, req *a2a.SendMessageRequest) <-chan streamItem {
	out := make(chan streamItem, 64)
	go func() {
		defer close(out)
		for ev, err := range c.SendStreamingMessage(ctx, req) {
			out <- streamItem{ev, err}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// firstEvent sends req and returns the answer's first event (nil when there is none)
// with the send's error.
func firstEvent(ctx context.Context, c *a2aclient.Client, streaming bool, req *a2a.SendMessageRequest) streamItem {
	evs, err := mwtest.Send(ctx, c, streaming, req)
	var ev a2a.Event
	if len(evs) > 0 {
		ev = evs[0]
	}
	return streamItem{ev, err}
}

// next returns the next item of s, or fails after a while.
func next(t *testing.T, s <-chan streamItem) (streamItem, bool) {
	t.Helper()
	select {
	case it, ok := <-s:
		return it, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return streamItem{}, false
	}
}

// streamToWorking starts a streaming send of msg, takes its first event as the task and
// waits until the task is working; it returns the stream and the task.
func streamToWorking(t *testing.T, ctx context.Context, c *a2aclient.Client, msg *a2a.Message) (<-chan streamItem, *a2a.Task) {
	t.Helper()
	first := stream(ctx, c, &a2a.SendMessageRequest{Message: msg})
	it, _ := next(t, first)
	task, ok := it.ev.(*a2a.Task)
	if it.err != nil || !ok {
		t.Fatalf("first stream: %v, %v; want the task", it.ev, it.err)
	}
	mwtest.WaitState(t, c, task.ID, a2a.TaskStateWorking)
	return first, task
}

// drain returns the events left on s until it closes, failing on an error.
func drain(t *testing.T, s <-chan streamItem, name string) []a2a.Event {
	t.Helper()
	var evs []a2a.Event
	for {
		it, ok := next(t, s)
		if !ok {
			return evs
		}
		if it.err != nil {
			t.Fatalf("%s: %v", name, it.err)
		}
		evs = append(evs, it.ev)
	}
}

// A streaming retry of a running task gets the task, then its later events live.
func TestStreamingRetryFollowsLiveEvents(t *testing.T) {
	for _, d := range mwtest.Dialects {
		t.Run(d.String(), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{})
			c := h.Client(d, "", "")
			ctx := context.Background()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "block until released")

			first, task := streamToWorking(t, ctx, c, msg)

			retry := stream(ctx, c, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{HistoryLength: ptr(0)}})
			it, _ := next(t, retry)
			got, ok := it.ev.(*a2a.Task)
			if it.err != nil || !ok || got.ID != task.ID || got.Status.State != a2a.TaskStateWorking {
				t.Fatalf("retry's first event: %#v, %v; want task %s working", it.ev, it.err, task.ID)
			}
			if want := 0; len(got.History) != want {
				t.Fatalf("retry's task has %d history messages, want %d for historyLength 0", len(got.History), want)
			}

			// Only now does the agent go on: what follows reaches the retry live.
			h.ReleaseAgents()
			later := drain(t, retry, "retry stream")
			var artifact bool
			for _, ev := range later {
				if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && a.TaskID == task.ID {
					artifact = true
				}
			}
			if !artifact || mwtest.FinalState(later) != a2a.TaskStateCompleted {
				t.Fatalf("retry's later events %v: want the artifact and completion", later)
			}
			for range first {
			}
			h.ExpectRanOnce(t, msg.ID)
		})
	}
}

// lookupSignal is an index that reports its Lookups once armed.
type lookupSignal struct {
	idempotency.KeyIndex
	mu     sync.Mutex
	looked chan struct{}
}

// arm returns a channel closed at the next Lookup.
func (l *lookupSignal) arm() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.looked = make(chan struct{})
	return l.looked
}

func (l *lookupSignal) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	l.mu.Lock()
	if l.looked != nil {
		close(l.looked)
		l.looked = nil
	}
	l.mu.Unlock()
	return l.KeyIndex.Lookup(ctx, scope, key)
}

// A retry while the first attempt has not produced a task yet waits, then answers
// 409 with Retry-After; a retry still waiting when the first attempt binds its task
// gets that task.
func TestInFlightRetryWaitsThenConflicts(t *testing.T) {
	for _, m := range mwtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			idx := &lookupSignal{KeyIndex: memstore.New(memstore.Options{})}
			h := mwtest.New(t, mwtest.Config{Index: idx, Opts: middleware.Options{ReplayWait: 10 * time.Second}})
			c := h.Client(m.Dialect, "", "")
			ctx := context.Background()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "hold the first attempt")

			firstDone := make(chan streamItem, 1)
			go func() { firstDone <- firstEvent(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg}) }()
			mwtest.Within(t, h.Agent.Started, "agent start") // claimed, forwarded, and the agent holds

			// Another process with a short wait gives up with 409.
			short := h.Client(m.Dialect, "", h.SecondServer(middleware.Options{ReplayWait: 50 * time.Millisecond}))
			_, err := mwtest.Send(ctx, short, m.Streaming, &a2a.SendMessageRequest{Message: msg})
			switch {
			case err == nil:
				t.Fatal("retry while in flight succeeded")
			case m.Binding == "JSONRPC" && !strings.Contains(err.Error(), "409"):
				t.Fatalf("retry while in flight: %v, want HTTP 409", err)
			case m.Binding == "HTTP+JSON" && (!errors.Is(err, a2a.ErrServerError) || !strings.Contains(err.Error(), "still in flight")):
				t.Fatalf("retry while in flight: %v, want a server error saying the first send is still in flight", err)
			}
			x := h.Wire.Last()
			// The lease (30 s) is extended every 10 s or so while the first attempt
			// runs: the time left is between 20 and 30 s.
			if ra, err := strconv.Atoi(x.Header.Get("Retry-After")); x.Status != 409 || err != nil || ra < 19 || ra > 30 {
				t.Fatalf("answer %d with Retry-After %q, want 409 and the lease left (20 to 30 s)", x.Status, x.Header.Get("Retry-After"))
			}

			// A retry in this process waits; it gets the task once the first attempt
			// binds it.
			looked := idx.arm()
			retryDone := make(chan streamItem, 1)
			go func() { retryDone <- firstEvent(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg}) }()
			mwtest.Within(t, looked, "the retry's wait")
			h.ReleaseAgents()
			first, retry := mwtest.Within(t, firstDone, "first send"), mwtest.Within(t, retryDone, "waiting retry")
			if first.err != nil || retry.err != nil || mwtest.TaskOf(first.ev) == "" || mwtest.TaskOf(first.ev) != mwtest.TaskOf(retry.ev) {
				t.Fatalf("first %v (%v), waiting retry %v (%v): want the same task", first.ev, first.err, retry.ev, retry.err)
			}
			h.ExpectRanOnce(t, msg.ID)
			h.ExpectOutcomes(middleware.OutcomeClaimed, middleware.OutcomeInFlight, middleware.OutcomeReplayed)
		})
	}
}

// 64 concurrent identical keyed sends run the agent once, and every answer names
// the same task. IDEMPOTENCY_LONG=1 runs the 100 keys of SPEC §5.
func TestConcurrentIdenticalSends(t *testing.T) {
	keys := 10
	if os.Getenv("IDEMPOTENCY_LONG") == "1" {
		keys = 100
	}
	const concurrent = 64
	for _, m := range mwtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{ReplayWait: 10 * time.Second}})
			h.Wire.Discard = true
			c := h.Client(m.Dialect, "", "")
			start := time.Now()
			for k := range keys {
				msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo concurrent "+strconv.Itoa(k))
				results := make(chan streamItem, concurrent)
				var wg sync.WaitGroup
				for range concurrent {
					wg.Go(func() {
						results <- firstEvent(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
					})
				}
				wg.Wait()
				close(results)
				var id a2a.TaskID
				for r := range results {
					if r.err != nil || mwtest.TaskOf(r.ev) == "" {
						t.Fatalf("key %d: answer %v, %v", k, r.ev, r.err)
					}
					if id == "" {
						id = mwtest.TaskOf(r.ev)
					}
					if mwtest.TaskOf(r.ev) != id {
						t.Fatalf("key %d: answers name tasks %s and %s", k, id, mwtest.TaskOf(r.ev))
					}
				}
				if n := h.Agent.RunsOf(msg.ID); n != 1 {
					t.Fatalf("key %d: agent ran %d times, want 1", k, n)
				}
			}
			if n := h.Agent.Runs(); n != int64(keys) {
				t.Fatalf("agent ran %d times for %d keys", n, keys)
			}
			t.Logf("%d keys × %d concurrent sends: %v", keys, concurrent, time.Since(start))
		})
	}
}

// A client that goes away while its keyed send runs does not stop the forward: it
// goes on without the client until the answer binds the key (SPEC §6). Until then an
// identical retry waits and gets 409, and never runs the agent again; once the agent
// goes on and answers, the key is bound, and a retry gets the task.
func TestClientGoneForwardGoesOn(t *testing.T) {
	eachMode(t, mwtest.Config{Opts: middleware.Options{ReplayWait: 50 * time.Millisecond}}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "hold while the client leaves")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
			done <- err
		}()
		mwtest.Within(t, h.Agent.Started, "agent start")
		cancel()
		if err := mwtest.Within(t, done, "cancelled send"); err == nil {
			t.Fatal("cancelled send succeeded")
		}

		_, err := mwtest.Send(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if x := h.Wire.Last(); err == nil || x.Status != http.StatusConflict {
			t.Fatalf("retry while the first attempt holds: %v (HTTP %d), want 409", err, x.Status)
		}
		h.ExpectOutcomes(middleware.OutcomeInFlight)

		h.ReleaseAgents()
		// The first attempt's client got nothing: abandoned, its key bound by the
		// answer that came after it left.
		h.ExpectOutcomes(middleware.OutcomeInFlight, middleware.OutcomeAbandoned)
		if e := h.LastEvent(); e.Outcome != middleware.OutcomeAbandoned || e.BoundBy != middleware.BoundByAnswer {
			t.Fatalf("first attempt observed as %+v, want abandoned with its key bound by the answer", e)
		}
		evs, err := mwtest.Send(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil || len(evs) == 0 || mwtest.TaskOf(evs[0]) == "" {
			t.Fatalf("retry after the first attempt answered: %v, %v; want its task", evs, err)
		}
		h.ExpectRanOnce(t, msg.ID)
	})
}

// firstEventDropper passes a handler's answers on, but drops the first event of
// every SubscribeToTask stream, as a2a-go v0.3.x's subscriptions start with the
// task's next update rather than the task. It signals each drop on dropped.
type firstEventDropper struct {
	next    http.Handler
	dropped chan struct{}
}

func (d *firstEventDropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"SubscribeToTask"`)) {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(&dropWriter{ResponseWriter: w, d: d}, r)
}

// dropWriter drops the bytes of the first event it is given.
type dropWriter struct {
	http.ResponseWriter
	d       *firstEventDropper
	held    []byte
	dropped bool
}

func (w *dropWriter) Write(p []byte) (int, error) {
	if w.dropped {
		return w.ResponseWriter.Write(p)
	}
	w.held = append(w.held, p...)
	if i := bytes.Index(w.held, []byte("\n\n")); i >= 0 {
		rest := w.held[i+2:]
		w.held, w.dropped = nil, true
		w.d.dropped <- struct{}{}
		if _, err := w.ResponseWriter.Write(rest); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (w *dropWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *dropWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A streaming retry still starts with the task when the server's subscription
// starts with an update: the middleware reads the task and sends it first.
func TestStreamingRetryWhenSubscriptionStartsWithUpdate(t *testing.T) {
	dropper := &firstEventDropper{dropped: make(chan struct{}, 1)}
	h := mwtest.New(t, mwtest.Config{Wrap: func(next http.Handler) http.Handler {
		dropper.next = next
		return dropper
	}})
	c := h.Client(mwtest.JSONRPC10, "", "")
	ctx := context.Background()
	msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "block until released")
	first, task := streamToWorking(t, ctx, c, msg)

	retry := stream(ctx, c, &a2a.SendMessageRequest{Message: msg})
	mwtest.Within(t, dropper.dropped, "the subscription's first event") // the subscription is attached
	h.ReleaseAgents()
	it, _ := next(t, retry)
	if got, ok := it.ev.(*a2a.Task); it.err != nil || !ok || got.ID != task.ID {
		t.Fatalf("retry's first event: %#v, %v; want task %s", it.ev, it.err, task.ID)
	}
	later := drain(t, retry, "retry stream")
	if mwtest.FinalState(later) != a2a.TaskStateCompleted {
		t.Fatalf("retry's later events %v: want the completion", later)
	}
	for range first {
	}
	h.ExpectRanOnce(t, msg.ID)
}
