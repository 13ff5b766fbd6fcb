package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
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
// comes first. While it runs unbound, the engine extends the claim's lease
// (keepLease), and the retries of this process do not take the claim over
// (liveForwards): the engine knows that attempt is alive.

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
		defer x.c.recoverTo(&x.ks, "watching a forward whose client left")
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
