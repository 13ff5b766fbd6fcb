package middleware

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/a2akit/idempotency"
)

// errAnswerTooLarge fails the wrapped handler's write of an answer the middleware
// holds back and that grew past maxAnswerCopy.
var errAnswerTooLarge = errors.New("middleware: answer too large to hold back")

// maxAnswerCopy bounds the copy of a non-streamed answer the middleware keeps to
// learn what a forwarded send produced. A larger answer passes on whole, but the
// key then stays pending until the adapter binds it or its lease ends.
const maxAnswerCopy = 32 << 20

// forward runs a claimed first send through the wrapped handler and binds the key
// to what it produced, or releases the key when it produced nothing.
func (x *exchange) forward(token idempotency.Token) {
	cs := x.c.newClaim(&x.ks, token)
	defer x.c.live.add(x.k.waitKey())()
	ctx, cw, stop := x.detach(cs)
	defer stop()
	defer x.c.keepLease(ctx, x.k, cs)()
	x.w = cw
	defer func() {
		if hooked, _ := cs.state(); hooked {
			x.c.early.bindsItself.Store(true)
		}
	}()
	if req := x.earlySend(); req != nil {
		if o, ok := x.forwardEarly(req.WithContext(withClaimedSend(ctx, cs)), &settler{x: x, d: x.s.d, cs: cs}); ok {
			x.observe(o)
			return
		}
	}
	fw := &forwardWriter{w: cw}
	fw.st = settler{x: x, d: x.s.d, cs: cs}
	x.c.next.ServeHTTP(fw, x.r.WithContext(withClaimedSend(ctx, cs)))
	x.observe(fw.finish())
}

// forwardWriter is the ResponseWriter of a forwarded first send. At the answer's
// header it chooses, once, the mode that passes the answer on and learns what the
// send produced: a unaryWriter, a streamWriter, or a heldBackWriter when the code
// behind could not bind the key. It implements http.Flusher, as a2a-go's streaming
// needs, and Unwrap for http.ResponseController.
type forwardWriter struct {
	w    http.ResponseWriter
	st   settler
	mode answerMode // nil until the header is written; then one of modes

	// modes hold the writer of each mode, so that choosing one allocates nothing.
	modes struct {
		unary    unaryWriter
		stream   streamWriter
		heldBack heldBackWriter
	}
}

// answerMode passes on the body of a forwarded answer, in one of its modes.
type answerMode interface {
	Write(p []byte) (int, error)
	Flush()
	// finish settles the send after the wrapped handler returned, and returns its
	// outcome.
	finish() Outcome
}

func (fw *forwardWriter) Header() http.Header { return fw.w.Header() }

func (fw *forwardWriter) WriteHeader(code int) {
	if fw.mode != nil || (code >= 100 && code < 200 && code != http.StatusSwitchingProtocols) {
		fw.w.WriteHeader(code)
		return
	}
	fw.st.status = code
	stream := isEventStream(fw.w.Header())
	if fw.st.cs.hookFailed() && !stream {
		// The adapter could not bind the key, so the agent did not run: when the
		// server answers its own internal error for that, fail closed as for a claim
		// the index could not make, with a 503 the client may retry.
		fw.modes.heldBack = heldBackWriter{w: fw.w, st: &fw.st}
		fw.mode = &fw.modes.heldBack
		return
	}
	addExtensionHeaders(fw.w.Header(), fw.st.d)
	fw.w.WriteHeader(code)
	if stream {
		fw.modes.stream = streamWriter{w: fw.w, st: &fw.st}
		fw.mode = &fw.modes.stream
	} else {
		fw.modes.unary = unaryWriter{w: fw.w, st: &fw.st}
		fw.mode = &fw.modes.unary
	}
}

func (fw *forwardWriter) Write(p []byte) (int, error) {
	if fw.mode == nil {
		fw.WriteHeader(http.StatusOK)
	}
	return fw.mode.Write(p)
}

// Flush flushes the answer to the client, as far as its mode lets it.
func (fw *forwardWriter) Flush() {
	if fw.mode == nil {
		fw.WriteHeader(http.StatusOK)
	}
	fw.mode.Flush()
}

// Unwrap returns the ResponseWriter the answer is written to.
func (fw *forwardWriter) Unwrap() http.ResponseWriter { return fw.w }

// finish settles the send after the wrapped handler returned.
func (fw *forwardWriter) finish() Outcome {
	if fw.mode == nil {
		fw.st.settle(carry{})
		return fw.st.outcome
	}
	return fw.mode.finish()
}

// unaryWriter passes a non-streamed answer on as it comes, and keeps a copy (until it
// grows past maxAnswerCopy) to read what the send produced when it ends.
type unaryWriter struct {
	w        http.ResponseWriter
	st       *settler
	body     bytes.Buffer
	overflow bool
}

func (uw *unaryWriter) Write(p []byte) (int, error) {
	if !uw.overflow {
		if uw.body.Len()+len(p) > maxAnswerCopy {
			uw.overflow = true
			uw.body = bytes.Buffer{}
		} else {
			uw.body.Write(p)
		}
	}
	return uw.w.Write(p)
}

func (uw *unaryWriter) Flush() { flush(uw.w) }

func (uw *unaryWriter) finish() Outcome {
	if uw.overflow {
		uw.st.settle(carry{})
	} else {
		uw.st.settle(uw.st.d.sendCarry(uw.st.status, uw.body.Bytes()))
	}
	return uw.st.outcome
}

// streamWriter passes a stream on, holding back its first event only until the key
// is bound to it, so that a client that saw the task and retries finds it bound.
type streamWriter struct {
	w            http.ResponseWriter
	st           *settler
	passing      bool // the first event was passed on; the rest follows it
	held         []byte
	scan         eventScanner
	pendingFlush bool
	err          error
}

func (sw *streamWriter) Write(p []byte) (int, error) {
	if sw.passing {
		return sw.w.Write(p)
	}
	if sw.err != nil {
		return 0, sw.err
	}
	sw.held = append(sw.held, p...)
	if data, _, ok := sw.scan.scan(sw.held, false); ok {
		sw.st.settle(sw.st.d.eventCarry(data))
		sw.passHeld()
	} else if len(sw.held) > maxEventBytes {
		sw.st.settle(carry{})
		sw.passHeld()
	} else if n := sw.scan.idle; n > 0 {
		// Keep-alives before the first event carry nothing: pass them on now.
		_, sw.err = sw.w.Write(sw.held[:n])
		sw.held = append(sw.held[:0], sw.held[n:]...)
		sw.scan.drop(n)
		if sw.pendingFlush && sw.err == nil {
			sw.pendingFlush = false
			flush(sw.w)
		}
	}
	if sw.err != nil {
		return 0, sw.err
	}
	return len(p), nil
}

// Flush flushes the stream; bytes of the first event are flushed once that event
// has been read whole and the key bound.
func (sw *streamWriter) Flush() {
	if !sw.passing {
		// What is held is not written yet: this flushes what came before it (the
		// headers), and the held bytes are flushed when they are written.
		sw.pendingFlush = true
	}
	flush(sw.w)
}

// passHeld writes the held bytes and stops holding.
func (sw *streamWriter) passHeld() {
	sw.passing = true
	if len(sw.held) > 0 {
		_, sw.err = sw.w.Write(sw.held)
	}
	sw.held = nil
	if sw.pendingFlush && sw.err == nil {
		flush(sw.w)
	}
}

func (sw *streamWriter) finish() Outcome {
	if !sw.passing {
		// The stream ended before its first event was complete: a last event
		// without its blank line still counts, as for a2a-go's client.
		data, _, ok := sw.scan.scan(sw.held, true)
		c := carry{}
		if ok {
			c = sw.st.d.eventCarry(data)
		}
		sw.st.settle(c)
		sw.passHeld()
	}
	return sw.st.outcome
}

// heldBackWriter keeps a non-streamed answer whose key the code behind could not
// bind (the adapter refused to run the agent) until it ends: an error is then
// replaced by a 503, anything else passed on.
type heldBackWriter struct {
	w    http.ResponseWriter
	st   *settler
	body bytes.Buffer
}

func (hw *heldBackWriter) Write(p []byte) (int, error) {
	if hw.body.Len()+len(p) > maxAnswerCopy {
		return 0, errAnswerTooLarge
	}
	return hw.body.Write(p)
}

// Flush does nothing: the answer is written when it ends.
func (hw *heldBackWriter) Flush() {}

// finish answers an error with a 503 (the index failed, the agent did not run, a
// retry with the same key may succeed); any other answer (a2a-go answers a follow-up
// it failed with the FAILED task) passes on as it was.
func (hw *heldBackWriter) finish() Outcome {
	x := hw.st.x
	c := x.s.d.sendCarry(hw.st.status, hw.body.Bytes())
	hw.st.settle(c)
	if c.kind == carryError {
		if outcomeOr(x.r.Context(), OutcomeUnavailable) == OutcomeAbandoned {
			return OutcomeAbandoned
		}
		writeFailure(hw.w, x.s.d, x.s, x.c.notBoundBehind(x.r.Context(), &x.ks), true)
		return OutcomeUnavailable
	}
	addExtensionHeaders(hw.w.Header(), x.s.d)
	hw.w.WriteHeader(hw.st.status)
	hw.w.Write(hw.body.Bytes())
	return hw.st.outcome
}

// settler acts, once, on what a forwarded send produced: it binds the key to a task
// or a Message reply, releases it when the send failed before anything existed, or
// leaves it pending (the lease decides) when that cannot be known.
type settler struct {
	x       *exchange
	d       dialect // the send's
	cs      *ClaimedSend
	status  int // of the forwarded answer
	settled bool
	outcome Outcome
}

func (st *settler) settle(c carry) {
	if st.settled {
		return
	}
	st.settled = true
	x := st.x
	st.outcome = x.c.settle(x.r.Context(), &x.ks, st.cs, c)
}
