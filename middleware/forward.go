package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/a2akit/idempotency"
)

// errAnswerTooLarge fails the wrapped handler's write of an answer the recorder holds
// back and that grew past maxResultBytes.
var errAnswerTooLarge = errors.New("middleware: answer too large to hold back")

// maxResultBytes bounds the copy of a non-streamed answer the middleware keeps to
// learn what a forwarded send produced. A larger answer passes on whole, but the
// key then stays pending until its lease ends (unless the adapter bound it).
const maxResultBytes = 32 << 20

// forward runs a claimed first send through the wrapped handler and binds the key
// to what it produced, or releases the key when it produced nothing.
func (x *exchange) forward(token idempotency.Token) {
	m := x.h.m
	cs := NewClaimedSend(m.index, x.scope, x.s.key, x.s.messageID, token)
	cs.waiters = &m.waiters
	cs.timeout = m.opts.IndexTimeout
	rec := &recorder{x: x, w: x.w, cs: cs}
	x.logAttrs(slog.LevelDebug, "idempotency: key claimed, send forwarded",
		slog.String("message_id", x.s.messageID), slog.String("follow_up_of", x.s.taskID))
	x.h.next.ServeHTTP(rec, x.r.WithContext(ContextWithClaimedSend(x.r.Context(), cs)))
	x.observe(rec.finish())
}

// recorder is the ResponseWriter of a forwarded first send. It passes the answer on
// as it comes, and learns from it what the send produced: from a copy of a
// non-streamed answer when it ends, or from the first event of a stream, which it
// holds back only until the key is bound to it, so that a client that saw the task
// and retries finds it bound. It implements http.Flusher, as a2a-go's streaming
// needs, and Unwrap for http.ResponseController.
type recorder struct {
	x  *exchange
	w  http.ResponseWriter
	cs *ClaimedSend

	wroteHeader bool
	status      int
	stream      bool

	// A non-streamed answer: a copy, until it grows past maxResultBytes.
	body     bytes.Buffer
	overflow bool

	// A stream: bytes held back until its first event is complete.
	holding      bool
	held         []byte
	scan         eventScanner
	pendingFlush bool
	err          error

	settled bool
	result  Outcome

	// heldBack: the code behind could not bind the key (the adapter refused to run
	// the agent), so the non-streamed answer is kept in body until it ends; an error
	// is then replaced by a 503, anything else passed on.
	heldBack bool
}

func (rw *recorder) Header() http.Header { return rw.w.Header() }

func (rw *recorder) WriteHeader(code int) {
	if rw.wroteHeader || (code >= 100 && code < 200 && code != http.StatusSwitchingProtocols) {
		rw.w.WriteHeader(code)
		return
	}
	rw.wroteHeader = true
	rw.status = code
	stream := isEventStream(rw.w.Header())
	if rw.cs.hookFailed() && !stream {
		// The adapter could not bind the key, so the agent did not run: when the
		// server answers its own internal error for that, fail closed as for a claim
		// the index could not make, with a 503 the client may retry (see finish).
		rw.heldBack = true
		return
	}
	addExtensionHeaders(rw.w.Header(), rw.x.s.b)
	rw.stream, rw.holding = stream, stream
	rw.w.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.heldBack {
		if rw.body.Len()+len(p) > maxResultBytes {
			return 0, errAnswerTooLarge
		}
		return rw.body.Write(p)
	}
	if !rw.stream {
		if !rw.overflow {
			if rw.body.Len()+len(p) > maxResultBytes {
				rw.overflow = true
				rw.body = bytes.Buffer{}
			} else {
				rw.body.Write(p)
			}
		}
		return rw.w.Write(p)
	}
	if !rw.holding {
		return rw.w.Write(p)
	}
	if rw.err != nil {
		return 0, rw.err
	}
	rw.held = append(rw.held, p...)
	if data, _, ok := rw.scan.scan(rw.held, false); ok {
		rw.settle(rw.x.s.b.eventOutcome(data))
		rw.passHeld()
	} else if len(rw.held) > maxEventBytes {
		rw.settle(outcome{})
		rw.passHeld()
	} else if n := rw.scan.idle; n > 0 {
		// Keep-alives before the first event carry nothing: pass them on now.
		_, rw.err = rw.w.Write(rw.held[:n])
		rw.held = append(rw.held[:0], rw.held[n:]...)
		rw.scan.drop(n)
		if rw.pendingFlush && rw.err == nil {
			rw.pendingFlush = false
			flush(rw.w)
		}
	}
	if rw.err != nil {
		return 0, rw.err
	}
	return len(p), nil
}

// Flush flushes the answer to the client; bytes of the first event are flushed
// once that event has been read whole and the key bound.
func (rw *recorder) Flush() {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.heldBack {
		return
	}
	if rw.holding {
		// What is held is not written yet: this flushes what came before it (the
		// headers), and the held bytes are flushed when they are written.
		rw.pendingFlush = true
	}
	flush(rw.w)
}

// Unwrap returns the ResponseWriter the recorder writes to.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.w }

// passHeld writes the held bytes and stops holding.
func (rw *recorder) passHeld() {
	rw.holding = false
	if len(rw.held) > 0 {
		_, rw.err = rw.w.Write(rw.held)
	}
	rw.held = nil
	if rw.pendingFlush && rw.err == nil {
		flush(rw.w)
	}
}

// finish settles the send after the wrapped handler returned, and returns its outcome.
func (rw *recorder) finish() Outcome {
	if rw.heldBack {
		return rw.finishHeldBack()
	}
	switch {
	case rw.holding:
		// The stream ended before its first event was complete: a last event
		// without its blank line still counts, as for a2a-go's client.
		data, _, ok := rw.scan.scan(rw.held, true)
		out := outcome{}
		if ok {
			out = rw.x.s.b.eventOutcome(data)
		}
		rw.settle(out)
		rw.passHeld()
	case rw.stream:
	case !rw.wroteHeader, rw.overflow:
		rw.settle(outcome{})
	default:
		rw.settle(rw.x.s.b.sendOutcome(rw.status, rw.body.Bytes()))
	}
	return rw.result
}

// finishHeldBack answers a send whose key the code behind could not bind: an error
// answer becomes a 503 (the index failed, the agent did not run, a retry with the same
// key may succeed); any other answer (a2a-go answers a follow-up it failed with the
// FAILED task) passes on as it was.
func (rw *recorder) finishHeldBack() Outcome {
	x := rw.x
	out := x.s.b.sendOutcome(rw.status, rw.body.Bytes())
	rw.settle(out)
	if out.kind == outcomeFailed {
		x.logAttrs(slog.LevelWarn, "idempotency: the key could not be bound behind the middleware, "+
			"keyed send refused (fail closed)")
		writeFailure(rw.w, x.s.b, x.s, &failure{kind: failUnavailable, message: msgUnavailable, retryAfter: defaultRetryAfter}, true)
		return OutcomeUnavailable
	}
	addExtensionHeaders(rw.w.Header(), x.s.b)
	rw.w.WriteHeader(rw.status)
	rw.w.Write(rw.body.Bytes())
	return rw.result
}

// settle acts on what the forwarded send produced: bind the key to a task or a
// Message reply, release it when the send failed before anything existed, or leave
// it pending (the lease decides) when that cannot be known.
func (rw *recorder) settle(out outcome) {
	if rw.settled {
		return
	}
	rw.settled = true
	rw.result = OutcomeClaimed
	x := rw.x
	ctx := x.r.Context()
	hooked, bound := rw.cs.state()
	switch out.kind {
	case outcomeTask, outcomeUpdate:
		rw.bind(idempotency.Binding{TaskID: out.taskID})
	case outcomeMessage:
		prev, ok := rw.cs.Bound()
		if ok && len(prev.Reply) > 0 {
			// The code behind recorded the reply itself (the adapter, from the agent's
			// own Message): that record stands, whatever bytes the wire carried.
			break
		}
		b := idempotency.Binding{Reply: out.message}
		if ok {
			b.TaskID = prev.TaskID
		}
		rw.bind(b)
	case outcomeFailed:
		switch {
		case bound:
			// The code behind bound a task before failing: retries replay it.
		case ctx.Err() != nil && !hooked:
			// The client went away, and nothing tells whether the agent started in
			// the background (a2a-go runs it on a context that outlives the request).
			x.logAttrs(slog.LevelInfo, "idempotency: client went away during a keyed send; "+
				"the key stays pending until its lease ends")
		default:
			rw.release()
		}
	default:
		if !bound {
			level := slog.LevelWarn
			if ctx.Err() != nil {
				level = slog.LevelInfo
			}
			x.logAttrs(level, "idempotency: could not learn what a keyed send produced; "+
				"the key stays pending until its lease ends", slog.Int("status", rw.status))
		}
	}
}

func (rw *recorder) bind(b idempotency.Binding) {
	x := rw.x
	// Detached as indexContext's are; the claim bounds the index call by
	// IndexTimeout itself, and makes none when b is bound already.
	ctx := context.WithoutCancel(x.r.Context())
	if err := rw.cs.bind(ctx, b, false); err != nil {
		x.logAttrs(slog.LevelError, "idempotency: could not bind the key to what the send produced; "+
			"retries wait for the lease to end", slog.String("task_id", b.TaskID), slog.Any("error", err))
	}
}

func (rw *recorder) release() {
	x, m := rw.x, rw.x.h.m
	ctx, cancel := m.indexContext(x.r, true)
	defer cancel()
	err := m.index.Release(ctx, x.scope, x.s.key, rw.cs.Token())
	m.waiters.notify(waitKey{x.scope, x.s.key})
	if err != nil {
		x.logAttrs(slog.LevelWarn, "idempotency: keyed send failed before a task existed, "+
			"and releasing its key failed; retries wait for the lease to end", slog.Any("error", err))
		return
	}
	x.logAttrs(slog.LevelInfo, "idempotency: keyed send failed before a task existed; key released")
	rw.result = OutcomeReleased
}
