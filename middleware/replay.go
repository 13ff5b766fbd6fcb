package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/a2akit/idempotency"
)

// replay answers a retry from what its first attempt produced: the Message reply
// again, or the task as it is now. Nothing runs.
func (x *exchange) replay(rec idempotency.Record) {
	start, before := time.Now(), x.ks.t
	var o Outcome
	var first time.Time // when a passed-on stream started
	switch {
	case rec.Reply != nil:
		o = x.answer(product{message: rec.Reply}, nil)
	case x.s.streaming:
		o, first = x.replayStream(rec)
	default:
		o = x.answerTask(rec)
	}
	end := time.Now()
	if !first.IsZero() {
		end = first
	}
	// readTask's waits and lookups are wait and index time.
	t := &x.ks.t
	t.replay = end.Sub(start) - (t.wait - before.wait) - (t.index - before.index)
	x.observe(o)
}

// answerTask answers the retry with the key's task as readTask reads it, or with
// the failure to read it, and returns the outcome.
func (x *exchange) answerTask(rec idempotency.Record) Outcome {
	return x.answer(x.readTask(rec))
}

// answer answers the retry with p, or with f when f is set, unless the client has
// gone, and returns the outcome: what the client got.
func (x *exchange) answer(p product, f *failure) Outcome {
	if f != nil {
		o := outcomeOr(x.r.Context(), failureOutcome(f))
		if o != OutcomeAbandoned {
			if f.fromFirstAttempt() {
				servedFromFirstAttempt(x.w.Header(), x.s.d)
			}
			writeFailure(x.w, x.s.d, x.s, f, true)
		}
		return o
	}
	o := outcomeOr(x.r.Context(), OutcomeReplayed)
	if o != OutcomeAbandoned && !x.writeProduct(p) {
		o = OutcomeInternal
	}
	return o
}

// readTask reads the key's task as it is now, with its history shaped by the
// retry's historyLength, waiting for a task not stored yet as the core's awaitTask
// does (executionRunning tells whether this process still runs its execution).
func (x *exchange) readTask(rec idempotency.Record) (product, *failure) {
	var task []byte
	reply, f := x.c.awaitTask(x.r.Context(), &x.ks, rec, func() *failure {
		var f *failure
		task, f = x.readTaskOnce(rec.TaskID)
		return f
	}, x.executionRunning)
	switch {
	case f != nil:
		return product{}, f
	case reply != nil:
		return product{message: reply}, nil
	}
	return x.shapedTask(task), nil
}

// shapedTask returns task, v1.0 JSON, with its history shaped by the retry's
// historyLength.
func (x *exchange) shapedTask(task []byte) product {
	return product{task: shapeHistory(task, x.s.historyLength)}
}

// readTaskOnce reads task taskID through Options.Tasks, or through the wrapped
// handler with the retry's own headers, so that the server's authorization applies.
func (x *exchange) readTaskOnce(taskID string) ([]byte, *failure) {
	if tr := x.c.tasks; tr != nil {
		task, err := tr.ReadTask(x.r.Context(), x.r, x.s.tenant, taskID)
		if f := x.c.taskSourceFailure(x.r.Context(), &x.ks, taskID, err); f != nil {
			return nil, f
		}
		if !json.Valid(task) {
			return nil, &failure{kind: failInternal, message: "the key's task or reply could not be answered: " +
				"the server's task source returned a task that is not JSON; ask the operator to fix it"}
		}
		return task, nil
	}
	bw := &bufferWriter{header: make(http.Header)}
	x.serveInner(bw, x.s.d.taskRequest(x.r, x.s, taskID), x.r.Context())
	return x.s.d.taskAnswer(bw.code(), bw.buf.Bytes())
}

// replayStream answers a streaming retry: the task first, then, while the task is
// still running, its live events, as SubscribeToTask gives them. When the task has
// finished (a2a-go then refuses the subscription) the answer is the task alone. It
// returns the outcome, and when the subscription's answer started (the zero time
// when it did not).
func (x *exchange) replayStream(rec idempotency.Record) (Outcome, time.Time) {
	sw := &subscribeWriter{x: x, w: x.w, header: make(http.Header), taskID: rec.TaskID}
	x.serveInner(sw, x.s.d.subscribeRequest(x.r, x.s, rec.TaskID), x.r.Context())
	if sw.passing {
		// The client got the task, whenever it closed the stream after.
		return OutcomeReplayed, sw.started
	}
	if x.r.Context().Err() != nil {
		return OutcomeAbandoned, time.Time{}
	}
	return x.answerTask(rec), time.Time{}
}

// subscribeWriter is the ResponseWriter of a synthesized subscription. It holds the
// answer back until its first event: a task is shaped by the retry's historyLength,
// framed for the retry and passed on with every later event as it comes. A first
// event that is an update (a2a-go v0.3.x's subscriptions do not start with the task)
// is passed on after the task, read then; such a subscription sends nothing before
// the task's next event, so the retry waits for that. Anything else (an error, a
// non-streamed answer) is dropped, and the retry is answered from a read of the task
// instead.
type subscribeWriter struct {
	x      *exchange
	w      http.ResponseWriter
	header http.Header
	taskID string

	wroteHeader bool
	held        []byte
	scan        eventScanner
	passing     bool      // the first event was passed on; the rest follows it
	started     time.Time // when it was
	dropping    bool      // the subscription failed; its answer is dropped
	err         error
}

func (sw *subscribeWriter) Header() http.Header {
	if sw.passing {
		return sw.w.Header()
	}
	return sw.header
}

func (sw *subscribeWriter) WriteHeader(code int) {
	if sw.wroteHeader || code < 200 {
		return
	}
	sw.wroteHeader = true
	sw.dropping = code != http.StatusOK || !isEventStream(sw.header)
}

func (sw *subscribeWriter) Write(p []byte) (int, error) {
	if !sw.wroteHeader {
		sw.WriteHeader(http.StatusOK)
	}
	switch {
	case sw.passing:
		return sw.w.Write(p)
	case sw.dropping:
		return len(p), nil
	case sw.err != nil:
		return 0, sw.err
	}
	sw.held = append(sw.held, p...)
	data, end, ok := sw.scan.scan(sw.held, false)
	if !ok {
		if len(sw.held) > maxEventBytes {
			sw.dropping = true
		}
		return len(p), nil
	}
	sw.firstEvent(data, end)
	sw.held = nil
	if sw.err != nil {
		return 0, sw.err
	}
	return len(p), nil
}

// firstEvent acts on the subscription's first event, data, which ends at end of the
// held bytes: the retry's answer starts with the task, or the subscription is
// dropped.
func (sw *subscribeWriter) firstEvent(data []byte, end int) {
	x := sw.x
	out := x.s.d.eventAnswer(data)
	switch {
	case out.isTask():
		task, ok := x.s.d.eventTask(data)
		if !ok {
			sw.dropping = true
			return
		}
		first, err := x.s.d.product(x.s, x.shapedTask(task))
		if err != nil {
			sw.dropping = true
			return
		}
		sw.start(first, sw.held[end:])
	case out.update:
		// The task first all the same, as it reads now; this update and the later
		// ones follow it.
		var first []byte
		if task, f := x.readTaskOnce(sw.taskID); f == nil {
			first, _ = x.s.d.product(x.s, x.shapedTask(task))
		}
		sw.start(first, sw.held)
	case out.Reply != nil:
		// Not a task's stream: pass it on as it is.
		sw.start(nil, sw.held)
	default:
		sw.dropping = true
	}
}

// start begins the answer to the retry: the event first (when not nil), then rest.
func (sw *subscribeWriter) start(first, rest []byte) {
	sw.passing, sw.started = true, time.Now()
	h := sw.w.Header()
	for k, v := range sw.header {
		if k != "Content-Length" {
			h[k] = v
		}
	}
	servedFromFirstAttempt(h, sw.x.s.d)
	writeEventHeaders(sw.w)
	if first != nil {
		if sw.err = writeEvent(sw.w, first); sw.err != nil {
			return
		}
	}
	if len(rest) > 0 {
		_, sw.err = sw.w.Write(rest)
	}
	flush(sw.w)
}

func (sw *subscribeWriter) Flush() {
	if sw.passing {
		flush(sw.w)
	}
}

// Unwrap returns the ResponseWriter of the retry.
func (sw *subscribeWriter) Unwrap() http.ResponseWriter { return sw.w }

// bufferWriter is a ResponseWriter that keeps the whole answer, for the wrapped
// handler's answers that the middleware reads before it answers itself.
type bufferWriter struct {
	header http.Header
	status int
	buf    bytes.Buffer
}

func (bw *bufferWriter) Header() http.Header { return bw.header }

func (bw *bufferWriter) WriteHeader(code int) {
	if bw.status == 0 && code >= 200 {
		bw.status = code
	}
}

func (bw *bufferWriter) Write(p []byte) (int, error) {
	if bw.status == 0 {
		bw.status = http.StatusOK
	}
	return bw.buf.Write(p)
}

// Flush does nothing: the answer is read when the handler returns.
func (bw *bufferWriter) Flush() {}

// code returns the status the handler answered with.
func (bw *bufferWriter) code() int {
	if bw.status == 0 {
		return http.StatusOK
	}
	return bw.status
}
