package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// A claimed first send runs to the point where its key is bound, whether or not its
// client stays (SPEC §6): a forward that stopped when the client left (as
// httputil.ReverseProxy and most handlers stop when the request's context ends)
// would leave the key pending while the server behind may go on running the agent,
// and a retry after the lease would run it again.
//
// So the forward runs on a context that keeps the request's values but not its
// cancellation (detach), and writes to the client through a clientWriter that
// discards what comes after the client left. Once the client has left, the forward
// is cut as soon as the key is bound (for a stream: its first event; for a unary
// answer: the answer), or Options.ForwardTimeout after the client left, whichever
// comes first. While it runs unbound, the claim's lease is renewed (keepLease), and
// the retries of this process do not take the claim over (liveForwards): the
// middleware knows that attempt is alive.

// detach returns the context the forward of cs runs in, the writer it writes the
// client's answer through, and the function to call when the forward has returned.
func (x *exchange) detach(cs *ClaimedSend) (context.Context, *clientWriter, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.r.Context()))
	cw := &clientWriter{w: x.w}
	var timer atomic.Pointer[time.Timer]
	cs.mu.Lock()
	cs.onBind = func() {
		if cw.left() {
			cancel()
		}
	}
	cs.mu.Unlock()
	stopWatch := context.AfterFunc(x.r.Context(), func() {
		cw.leave()
		if _, bound := cs.state(); bound {
			cancel()
			return
		}
		x.c.logSend(x.r.Context(), &x.ks, slog.LevelDebug, "idempotency: client left a keyed send before its key was bound; the forward goes on",
			slog.Duration("at_most", x.c.forwardTimeout))
		timer.Store(time.AfterFunc(x.c.forwardTimeout, cancel))
	})
	return ctx, cw, func() {
		stopWatch()
		if t := timer.Load(); t != nil {
			t.Stop()
		}
		cancel()
	}
}

// clientWriter is the client's ResponseWriter under a forward that outlives the
// client: once the client has left (or a write to it failed), writes are discarded
// and reported as done, so that the handler behind goes on as if it were there.
type clientWriter struct {
	w    http.ResponseWriter
	gone atomic.Bool
}

func (cw *clientWriter) leave()     { cw.gone.Store(true) }
func (cw *clientWriter) left() bool { return cw.gone.Load() }

func (cw *clientWriter) Header() http.Header { return cw.w.Header() }

func (cw *clientWriter) WriteHeader(code int) {
	if !cw.left() {
		cw.w.WriteHeader(code)
	}
}

func (cw *clientWriter) Write(p []byte) (int, error) {
	if cw.left() {
		return len(p), nil
	}
	if _, err := cw.w.Write(p); err != nil {
		cw.leave()
	}
	return len(p), nil
}

func (cw *clientWriter) Flush() {
	if !cw.left() {
		flush(cw.w)
	}
}

// Unwrap returns the client's ResponseWriter.
func (cw *clientWriter) Unwrap() http.ResponseWriter { return cw.w }

// liveForwards counts, by key, the forwards of this process that hold a claim and
// have not returned.
type liveForwards struct {
	mu sync.Mutex
	n  map[waitKey]int
}

// add records a live forward of k; call the function it returns when it is over.
func (l *liveForwards) add(k waitKey) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = make(map[waitKey]int)
	}
	l.n[k]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[k]--; l.n[k] <= 0 {
			delete(l.n, k)
		}
	}
}

// has reports whether a forward of k is live in this process.
func (l *liveForwards) has(k waitKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[k] > 0
}

// leaseSlack is how long after its lease should have ended a renewal claims again,
// so that the index's clock agrees it has.
const leaseSlack = 50 * time.Millisecond

// keepLease renews the lease of cs's claim on k until ctx ends, the key is bound, or
// the returned stop is called: when the lease ends, it claims the key again, which the
// index grants to the same message once the lease has ended, and cs adopts the new
// token. A retry on another process that claims at that very moment may win instead;
// then the claim is lost, and this is logged. (KeyIndex has no call that extends a
// lease in place.) It runs on a timer, not a goroutine of its own, until the lease
// first ends.
func (c core) keepLease(ctx context.Context, k claimKey, cs *ClaimedSend) (stop func()) {
	var mu sync.Mutex
	var timer *time.Timer
	stopped := false
	var schedule func(end time.Time)
	schedule = func(end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(time.Until(end)+leaseSlack, func() {
				if next, ok := c.renewLease(ctx, k, cs); ok {
					schedule(next)
				}
			})
		}
	}
	schedule(time.Now().Add(c.lease))
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}

// renewLease renews cs's claim on k once, and returns when the lease it holds then
// ends, or false when there is nothing more to renew.
func (c core) renewLease(ctx context.Context, k claimKey, cs *ClaimedSend) (time.Time, bool) {
	cl, bound, err := cs.renew(func() (idempotency.Claim, error) { return c.claim(ctx, k, new(timing)) })
	switch {
	case bound, ctx.Err() != nil:
		return time.Time{}, false
	case err != nil:
		c.log.LogAttrs(ctx, slog.LevelWarn, "idempotency: renewing the lease of a keyed send still running failed; trying again",
			slog.String("request_id", cs.RequestID()), slog.String("key", idempotency.RedactKey(k.key)), slog.String("scope", k.scope), slog.Any("error", err))
		return time.Now().Add(time.Second), true
	case cl.Status == idempotency.Claimed:
		return time.Now().Add(c.lease), true
	case cl.Status == idempotency.HeldBySameMessage && cl.Record.Pending() &&
		cl.Record.LeaseExpiresAt.Before(time.Now().Add(c.lease/2)):
		// The index's clock says the lease has not quite ended yet.
		return cl.Record.LeaseExpiresAt, true
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "idempotency: the lease of a keyed send still running ended and a retry "+
		"on another process took the claim over; the agent may run twice for this key (raise Lease)",
		slog.String("request_id", cs.RequestID()), slog.String("key", idempotency.RedactKey(k.key)), slog.String("scope", k.scope))
	return time.Time{}, false
}
