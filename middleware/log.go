package middleware

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/a2akit/idempotency"
)

// What the engine reports: outcomes, Events and log lines.

// levelError is slog.LevelError, for the files that log through logSend only.
const levelError = slog.LevelError

// attrError is the log attribute of an error.
func attrError(err error) slog.Attr { return slog.Any("error", err) }

// outcomeOr returns o, or OutcomeAbandoned when ctx has ended: the client went away
// (or a deadline set in front of the kit passed) before it was answered.
func outcomeOr(ctx context.Context, o Outcome) Outcome {
	if ctx.Err() != nil {
		return OutcomeAbandoned
	}
	return o
}

// failureOutcome is the outcome of a retry answered with f.
func failureOutcome(f *failure) Outcome {
	switch {
	case f.notFound():
		return OutcomeTaskGone
	case f.kind == failInFlight:
		return OutcomeInFlight
	case f.kind == failUnavailable:
		return OutcomeUnavailable
	case f.kind == failInternal:
		return OutcomeInternal
	case f.kind == failUnreplayable:
		return OutcomeUnreplayable
	}
	return OutcomeFailed // the server's own error, passed on
}

// sendOutcome is a send's outcome once decided. The request's goroutine decides it
// while the engine's own goroutines (the lease keeper, the rebind, the probe) may
// log the send, so it is read and written atomically.
type sendOutcome struct{ p atomic.Pointer[Outcome] }

// set records o.
func (so *sendOutcome) set(o Outcome) { so.p.Store(&o) }

// get returns the outcome, or "" before it is decided.
func (so *sendOutcome) get() Outcome {
	if p := so.p.Load(); p != nil {
		return *p
	}
	return ""
}

// observeSend reports send, with outcome o, to Options.Observe, and logs it at
// debug level.
func (c core) observeSend(send *Send, o Outcome) {
	send.outcome.set(o)
	c.logSend(context.Background(), send, slog.LevelDebug, "idempotency: keyed send done", slog.String("bound_by", string(send.boundBy)),
		slog.Duration("index_time", send.t.index), slog.Duration("wait_time", send.t.wait), slog.Duration("replay_time", send.t.replay))
	if c.observe != nil {
		c.observe(Event{Outcome: o, Binding: send.Binding, Version: send.Version, Streaming: send.Streaming, Scope: send.k.scope,
			RequestID: send.RequestID, BoundBy: send.boundBy, IndexTime: send.t.index, WaitTime: send.t.wait, ReplayTime: send.t.replay})
	}
}

// logSend logs msg with send's attributes and extra: on every line of one keyed send
// the same request_id and redacted key (at every level, so that a grep for either
// follows the send from claim to bind), and its outcome once decided.
func (c core) logSend(ctx context.Context, send *Send, level slog.Level, msg string, extra ...slog.Attr) {
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 7+len(extra))
	attrs = append(attrs,
		slog.String("request_id", send.RequestID),
		slog.String("key", idempotency.RedactKey(send.Key)),
		slog.String("binding", string(send.Binding)),
		slog.String("version", string(send.Version)),
		slog.Bool("streaming", send.Streaming),
		slog.String("scope", idempotency.LogValue(send.k.scope)))
	if o := send.outcome.get(); o != "" {
		attrs = append(attrs, slog.String("outcome", string(o)))
	}
	c.log.LogAttrs(ctx, level, msg, append(attrs, extra...)...)
}

// maxRequestIDBytes bounds the X-Request-Id the logs take over.
const maxRequestIDBytes = 64

// requestID returns the request_id of a send that came with header X-Request-Id
// id: id when it is short and printable ASCII, or else a new one.
func requestID(id string) string {
	if id != "" && len(id) <= maxRequestIDBytes && printable(id) {
		return id
	}
	return newRequestID()
}

// newRequestID returns a random request_id.
func newRequestID() string {
	var b [16]byte
	return string(strconv.AppendUint(b[:0], rand.Uint64(), 16))
}

// printable reports whether s is printable ASCII without spaces.
func printable(s string) bool {
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
