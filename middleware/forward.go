package middleware

import (
	"bytes"
	"context"
	"errors"
	"net/http"
)

// errAnswerTooLarge fails the wrapped handler's write of an answer the middleware
// holds back and that grew past maxAnswerCopy.
var errAnswerTooLarge = errors.New("middleware: answer too large to hold back")

// maxAnswerCopy bounds the copy of a non-streamed answer the middleware keeps to
// learn what a forwarded send produced. A larger answer passes on whole, but the
// key then stays pending until the adapter binds it or its lease ends.
const maxAnswerCopy = 32 << 20

// forward runs a claimed first send through the wrapped handler, once, and settles
// its key by what the answer showed. It reports true only when early bind's
// streaming form was refused as a protocol the server does not serve: nothing ran,
// the claim was released, and the send is to be claimed again and forwarded as it
// was sent (early is false then).
func (x *exchange) forward(step *Step, early bool) (again bool) {
	defer step.Done()
	x.first = true
	defer func() { x.first = false }()
	cs := step.claim
	client := x.w
	ctx, cw, stop := x.detach(cs)
	defer stop()
	x.w = cw
	defer func() {
		x.w = client
		if hooked, _ := cs.state(); hooked {
			x.m.early.bindsItself.Store(true)
		}
	}()
	st := &settler{x: x, step: step, fwd: ctx}
	if req := x.earlySend(early); req != nil {
		o, again := x.forwardEarly(req.WithContext(withClaimedSend(ctx, cs)), st)
		if !again {
			x.observe(o)
		}
		return again
	}
	fw := &forwardWriter{w: cw, st: st}
	x.next.ServeHTTP(fw, x.r.WithContext(withClaimedSend(ctx, cs)))
	x.observe(fw.finish())
	return false
}

// forwardWriter is the ResponseWriter of a forwarded first send. At the answer's
// header it chooses, once, the mode that passes the answer on and learns what the
// send produced: a unaryWriter, a streamWriter, or a heldBackWriter when the code
// behind could not bind the key. It implements http.Flusher, as a2a-go's streaming
// needs, and Unwrap for http.ResponseController.
type forwardWriter struct {
	w    http.ResponseWriter
	st   *settler
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
	if fw.st.step.claim.hookFailed() && !stream {
		// The adapter could not bind the key, so the agent did not run: when the
		// server answers its own internal error for that, fail closed as for a claim
		// the index could not make, with a 503 the client may retry.
		fw.modes.heldBack = heldBackWriter{w: fw.w, st: fw.st}
		fw.mode = &fw.modes.heldBack
		return
	}
	addExtensionHeaders(fw.w.Header(), fw.st.x.s.d)
	fw.w.WriteHeader(code)
	if stream {
		fw.modes.stream = streamWriter{w: fw.w, st: fw.st}
		fw.mode = &fw.modes.stream
	} else {
		fw.modes.unary = unaryWriter{w: fw.w, st: fw.st}
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
		// The handler wrote nothing: a cut, or a handler that answered no one.
		fw.st.settle(Produced{})
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
	switch {
	case uw.overflow && uw.st.status >= 200 && uw.st.status < 300:
		// A success answer too large to read: the send ran.
		uw.st.settle(Produced{PastBound: true})
	case uw.overflow:
		uw.st.settle(Produced{})
	default:
		uw.st.settle(uw.st.x.s.d.sendAnswer(uw.st.status, uw.body.Bytes()))
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
		sw.st.settle(sw.st.x.s.d.eventAnswer(data))
		sw.passHeld()
	} else if len(sw.held) > maxEventBytes {
		// A first event too large to read: the send ran.
		sw.st.settle(Produced{PastBound: true})
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
		p := Produced{}
		if ok {
			p = sw.st.x.s.d.eventAnswer(data)
		}
		sw.st.settle(p)
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

// finish answers with a 503 when the send produced nothing (the index failed, the
// agent did not run, a retry with the same key may succeed); any other answer
// (a2a-go answers a follow-up it failed with the FAILED task) passes on as it was.
func (hw *heldBackWriter) finish() Outcome {
	x := hw.st.x
	hw.st.settle(x.s.d.sendAnswer(hw.st.status, hw.body.Bytes()))
	if hw.st.notBound != nil {
		if hw.st.outcome == OutcomeAbandoned {
			return OutcomeAbandoned
		}
		writeFailure(hw.w, x.s.d, x.s, hw.st.notBound, true)
		return OutcomeUnavailable
	}
	addExtensionHeaders(hw.w.Header(), x.s.d)
	hw.w.WriteHeader(hw.st.status)
	hw.w.Write(hw.body.Bytes())
	return hw.st.outcome
}

// settler acts, once, on what a forwarded send's answer showed, through the engine's
// settle: it binds the key, releases it, or leaves it pending by the rule of
// ambiguity.
type settler struct {
	x    *exchange
	step *Step
	// fwd is the forward's context: once it is cut (ForwardTimeout after the client
	// left), an error the handler answers says nothing about what ran.
	fwd     context.Context
	status  int // of the forwarded answer
	settled bool
	outcome Outcome
	// notBound is the 503 to answer when the code behind could not bind the key.
	notBound *failure
}

func (st *settler) settle(p Produced) {
	if st.settled {
		return
	}
	st.settled = true
	if p.Refused && st.fwd.Err() != nil {
		p.Refused = false // an answer to a cut forward: what ran is unknown
	}
	x := st.x
	st.outcome, st.notBound = x.c.settle(x.r.Context(), &x.ks, st.step, p)
}
