package middleware_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// A first send whose answer named its task while the index could not bind the key
// (PostgreSQL cut off, say) keeps its claim: the engine binds it again in the
// background, extending the lease meanwhile, so that a retry after the lease's time
// is answered with the task, not run again. Seen in CI: a retry took the claim over
// once the lease ended and the agent ran twice for one key. Every mode, with the
// middleware binding from the answer and with the adapter binding once the task is
// stored.
func TestBindFailureKeepsTheClaimUntilBound(t *testing.T) {
	const lease = 300 * time.Millisecond
	for _, m := range mwtest.Modes {
		for _, adapter := range []bool{false, true} {
			name := m.String()
			if adapter {
				name += "/adapter"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
				h := mwtest.New(t, mwtest.Config{Index: ix, Adapter: adapter,
					Opts: middleware.Options{Lease: lease, ReplayWait: 100 * time.Millisecond}})
				ix.FailNext(testkit.OpBind, 3) // the bind at the answer, and two more
				c := h.Client(m.Dialect, "", "")
				key := idempotency.NewKey()
				msg := mwtest.KeyedMessage(t, key, "echo bind fails")
				evs, err := mwtest.Send(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
				if err != nil || len(evs) == 0 || mwtest.TaskOf(evs[0]) == "" {
					t.Fatalf("first send: %v, %v; want its task", evs, err)
				}
				first := mwtest.TaskOf(evs[0])

				time.Sleep(3 * lease) // the lease would have ended twice over
				evs, err = mwtest.Send(context.Background(), c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
				if err != nil || len(evs) == 0 || mwtest.TaskOf(evs[0]) != first {
					t.Errorf("retry after %v: %v, %v; want task %s", 3*lease, evs, err, first)
				}
				if runs := h.Agent.RunsOf(msg.ID); runs != 1 {
					t.Errorf("the agent ran %d times for one key; want 1\n%s", runs, h.Logs)
				}
				rec, _, err := h.Index.Lookup(context.Background(), "", key)
				if err != nil || rec.TaskID != string(first) {
					t.Errorf("the key's record %+v, %v; want bound to %s", rec, err, first)
				}
			})
		}
	}
}

// The lease keeper and the rebind log a send from their own goroutines (with its
// outcome, once decided) while the request's goroutine decides that outcome: the
// outcome is read and written atomically. Run under -race: sends whose lease
// extensions are slow and fail end while an extension is under way; it fails after
// the send's outcome was decided, and is logged with it.
func TestSendLoggedWhileItsOutcomeIsDecided(t *testing.T) {
	const sends = 8
	ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
	h := mwtest.New(t, mwtest.Config{Index: ix, Opts: middleware.Options{Lease: 300 * time.Millisecond}})
	ix.SetFail(testkit.OpExtend, true)
	ix.SetDelay(testkit.OpExtend, 90*time.Millisecond) // under way three quarters of the time
	c := h.Client(mwtest.JSONRPC10, "", "")
	var wg sync.WaitGroup
	for i := range sends {
		wg.Go(func() {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), fmt.Sprintf("block send %d", i))
			if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err != nil {
				t.Errorf("send %d: %v", i, err)
			}
		})
	}
	time.Sleep(400 * time.Millisecond) // past the first extensions
	h.ReleaseAgents()
	wg.Wait()
	h.ExpectOutcomes(slices.Repeat([]middleware.Outcome{middleware.OutcomeClaimed}, sends)...)
	time.Sleep(200 * time.Millisecond) // the extensions under way end
	if !strings.Contains(h.Logs.String(), "outcome=claimed") {
		t.Errorf("no extension was under way when a send ended (or its line does not name the outcome):\n%s", h.Logs)
	}
}
