package middleware

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// probeWait is how long a synthesized subscription must stay open, neither failing
// nor ending, for the execution it follows to count as running. A server answers a
// subscription to an execution it does not run at once (a2a-go: TaskNotFound, "no
// active execution"), so the wait only costs when the execution is running.
const probeWait = 500 * time.Millisecond

// executionRunning reports whether the wrapped handler still runs an execution of
// taskID: a subscription to it opens and, within probeWait, carries an event or
// stays open without failing. readTask asks it when the task of an old claim is not
// found, to tell a task that is gone from one whose agent is still before its first
// event (a2a-go stores a task at that event, and the adapter binds the key before the
// agent starts). Only executions of this process are seen: on a replica that does not
// run the agent, the answer is false.
func (x *exchange) executionRunning(taskID string) bool {
	ctx, cancel := context.WithCancel(x.r.Context())
	defer cancel()
	pw := &probeWriter{header: make(http.Header), d: x.s.d, event: make(chan struct{})}
	req := x.s.d.subscribeRequest(x.r, x.s, taskID)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer x.c.recoverTo(&x.ks, "probing whether an execution runs")
		x.serveInner(pw, req, ctx)
	}()
	timer := time.NewTimer(probeWait)
	defer timer.Stop()
	select {
	case <-pw.event:
		cancel()
		<-done
		return true
	case <-done:
		// Answered and ended: running only if it carried an event before it ended.
		return pw.sawEvent()
	case <-timer.C:
		cancel()
		<-done
		return !pw.sawFailure()
	}
}

// probeWriter is the ResponseWriter of executionRunning's subscription. It keeps
// nothing but whether the subscription carried an event or failed.
type probeWriter struct {
	header http.Header
	d      dialect
	event  chan struct{} // closed at the first event that is not an error

	mu      sync.Mutex
	status  int
	held    []byte
	scan    eventScanner
	evented bool // its first event is a task, an update or a Message
	failed  bool // not a stream, or its first event is an error
}

func (pw *probeWriter) Header() http.Header { return pw.header }

func (pw *probeWriter) WriteHeader(code int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.status != 0 || code < 200 {
		return
	}
	pw.status = code
	if code != http.StatusOK || !isEventStream(pw.header) {
		pw.failed = true
	}
}

func (pw *probeWriter) Write(p []byte) (int, error) {
	pw.WriteHeader(http.StatusOK)
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.failed || pw.evented {
		return len(p), nil
	}
	pw.held = append(pw.held, p...)
	data, _, ok := pw.scan.scan(pw.held, false)
	if !ok {
		if len(pw.held) > maxEventBytes {
			pw.failed = true
		}
		return len(p), nil
	}
	pw.held = nil
	if pw.d.eventAnswer(data).isEvent() {
		pw.evented = true
		close(pw.event)
	} else {
		pw.failed = true
	}
	return len(p), nil
}

// Flush does nothing: the probe answers no one.
func (pw *probeWriter) Flush() {}

func (pw *probeWriter) sawEvent() bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.evented
}

func (pw *probeWriter) sawFailure() bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.failed
}
