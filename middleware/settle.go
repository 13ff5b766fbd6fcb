package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/a2akit/idempotency"
)

// The rule of ambiguity: a key is released only when it is certain that nothing ran,
// and a claimed send is forwarded at most once. ruling is its one table in code (the
// package documentation has it too, with what each binding counts as a definite
// refusal).
//
//	what the forward's answer showed (Produced)     the key
//	a task (Task, status or artifact update)          bound to the task
//	a Message reply the index can store               bound to the reply
//	a value past a bound (answer, reply, task id)     bound to the unreplayable marker
//	a definite refusal by the server itself (below)   released
//	anything else (transport error, hop 502/504,      left pending: retries wait, get 409,
//	  timeout, 5xx, unreadable, client gone unread)     and take over when the lease ends
type ruling int

const (
	keepPending ruling = iota
	bindTask
	bindReply
	bindMarker
	release
)

// ruleOf returns what the rule of ambiguity does with a key whose forward showed p.
func ruleOf(p Produced) ruling {
	switch {
	case p.PastBound:
		return bindMarker
	case p.TaskID != "":
		return bindTask
	case p.Reply != nil:
		return bindReply
	case p.Refused:
		return release
	}
	return keepPending
}

// unreplayableReply is what a key is bound to when what its first attempt produced
// cannot be stored or read: a retry finds it and is told that the reply cannot be
// replayed, instead of waiting for a lease and running the agent again. It is no
// A2A Message (no messageId, no role), so it can be no agent's reply.
var unreplayableReply = []byte(`{"a2akit.idempotency":"reply-not-replayable"}`)

// unreplayable reports whether rec is bound to the unreplayable marker.
func unreplayable(rec idempotency.Record) bool { return bytes.Equal(rec.Reply, unreplayableReply) }

// unreplayableFailure answers a retry of a key bound to the unreplayable marker.
func unreplayableFailure() *failure {
	return &failure{kind: failUnreplayable, message: msgUnreplayable}
}

// settle is the engine's transition out of "forwarding": it acts, once, on what the
// forward showed (p) by the rule of ambiguity, stops the lease's extension once the
// key is bound or released, and returns the send's outcome. When the code behind
// could not bind the key (so it did not run the agent) and the send produced
// nothing, the claim never left the process: it is released, and settle also returns
// the 503 to answer instead, where the binding still can (the outcome is then
// unavailable; settle's is that of the answer passed on).
func (c core) settle(ctx context.Context, send *Send, step *Step, p Produced) (Outcome, *failure) {
	cs := step.claim
	var notBound *failure
	if cs.hookFailed() && !cs.holding() && p.TaskID == "" && p.Reply == nil && !p.PastBound {
		p = Produced{Refused: true}
		notBound = c.notBoundBehind(ctx, send)
	}
	o, again := c.settleKey(ctx, send, cs, p)
	if again != nil {
		c.rebind(send, cs, *again)
	}
	if _, bound := cs.state(); bound || again != nil || o == OutcomeReleased || notBound != nil {
		step.keep.stop() // (a rebind keeps the lease itself)
	}
	var bindTime time.Duration
	send.boundBy, bindTime = cs.report()
	send.t.index += bindTime
	return o, notBound
}

// settleKey is settle's work on the key, and returns what the client got: nothing
// when it had gone by then (abandoned); else a result (of a stream: its first event)
// or an answer it could not read (claimed), or the server's own error, with the key
// released (released) or not (failed). It also returns the binding to make again
// when binding failed for want of the index, or nil.
func (c core) settleKey(ctx context.Context, send *Send, cs *ClaimedSend, p Produced) (Outcome, *idempotency.Binding) {
	gone := ctx.Err() != nil
	_, bound := cs.state()
	got := OutcomeClaimed
	var again *idempotency.Binding
	switch ruleOf(p) {
	case bindTask:
		again = c.bindProduced(ctx, send, cs, idempotency.Binding{TaskID: p.TaskID})
	case bindReply:
		prev, ok := cs.Bound()
		if ok && len(prev.Reply) > 0 {
			// The code behind recorded the reply itself (the adapter, from the agent's
			// own Message): that record stands, whatever bytes the wire carried.
			break
		}
		again = c.bindProduced(ctx, send, cs, idempotency.Binding{Reply: p.Reply, TaskID: prev.TaskID})
	case bindMarker:
		if prev, ok := cs.Bound(); !ok || len(prev.Reply) == 0 {
			again = c.bindMarker(ctx, send, cs, prev.TaskID, "the answer is past the bounds the kit reads or the index stores")
		}
	case release:
		switch {
		case bound:
			// The code behind bound a task before failing: retries replay it.
			got = OutcomeFailed
		case cs.holding():
			// The code behind said the send may have had effects (the agent started):
			// releasing could run it twice.
			c.logSend(ctx, send, slog.LevelWarn, "idempotency: keyed send failed after it may have had effects, before "+
				"anything bound its key; the key stays pending until its lease ends")
			got = OutcomeFailed
		case c.releaseProduced(ctx, send, cs):
			got = OutcomeReleased
		default:
			got = OutcomeFailed
		}
	case keepPending:
		if p.fail != nil {
			got = OutcomeFailed // the server's own error, whose outcome is unknown
		}
		if !bound {
			level := slog.LevelWarn
			if gone {
				level = slog.LevelInfo
			}
			c.logSend(ctx, send, level, "idempotency: could not learn what a keyed send produced from its answer (not read, "+
				"or an error that does not say nothing ran); its key stays pending, and retries wait until it is "+
				"bound or its lease ends")
		}
	}
	if gone {
		// The client left before the answer came (a forward goes on without it
		// until the key is bound): it got nothing.
		return OutcomeAbandoned, again
	}
	return got, again
}

// bindProduced binds the key to b. A value the index refuses to store (past its
// bounds, or past its memory) binds the unreplayable marker instead, so that the key
// never waits for its lease to end and a retry never runs the agent again. It
// returns the binding to make again when the index failed (unavailable), or nil.
func (c core) bindProduced(ctx context.Context, send *Send, cs *ClaimedSend, b idempotency.Binding) *idempotency.Binding {
	if err := idempotency.CheckLengths("", "", b); err != nil {
		return c.bindMarker(ctx, send, cs, "", err.Error())
	}
	// Detached as the core's index calls after the forward are; the claim bounds the
	// index call by IndexTimeout itself, and makes none when b is bound already.
	err := cs.bind(context.WithoutCancel(ctx), b, false)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idempotency.ErrInvalidArgument), errors.Is(err, idempotency.ErrFull):
		return c.bindMarker(ctx, send, cs, "", err.Error())
	}
	return c.bindFailed(ctx, send, b, err)
}

// bindMarker binds the key to the unreplayable marker (with taskID, when the code
// behind bound one), and logs why. It returns the marker's binding to make again
// when the index failed, or nil.
func (c core) bindMarker(ctx context.Context, send *Send, cs *ClaimedSend, taskID, why string) *idempotency.Binding {
	b := idempotency.Binding{TaskID: taskID, Reply: unreplayableReply}
	if err := cs.bind(context.WithoutCancel(ctx), b, false); err != nil {
		return c.bindFailed(ctx, send, b, err)
	}
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: what a keyed send produced cannot be kept for its retries; "+
		"its key is bound to a marker, and retries are told it cannot be replayed", slog.String("because", why))
	return nil
}

// bindFailed logs a bind of b that failed with err, and returns b when binding it
// again may succeed: unless the key is bound already (to another value) or the claim
// was taken over (fenced out), a rebind goes on in the background.
func (c core) bindFailed(ctx context.Context, send *Send, b idempotency.Binding, err error) *idempotency.Binding {
	if errors.Is(err, idempotency.ErrAlreadyBound) {
		c.logSend(ctx, send, slog.LevelWarn, "idempotency: the key was bound already, to another value than what "+
			"the send's answer showed; that binding stands", slog.String("task_id", idempotency.LogValue(b.TaskID)))
		return nil
	}
	if errors.Is(err, idempotency.ErrNotOwner) {
		c.logSend(ctx, send, slog.LevelError, "idempotency: could not bind the key to what the send produced: its lease "+
			"ended and a retry may have taken the claim over (raise Lease or IndexTimeout)",
			slog.String("task_id", idempotency.LogValue(b.TaskID)), slog.Any("error", err))
		return nil
	}
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: could not bind the key to what the send produced; binding "+
		"it again in the background, its lease kept meanwhile", slog.String("task_id", idempotency.LogValue(b.TaskID)),
		slog.Any("error", err))
	return &b
}

// releaseProduced releases the key of a send the server refused, and reports
// whether it did.
func (c core) releaseProduced(ctx context.Context, send *Send, cs *ClaimedSend) bool {
	if err := c.release(ctx, send.k, cs.Token(), &send.t); err != nil {
		c.logSend(ctx, send, slog.LevelWarn, "idempotency: the server refused a keyed send, "+
			"and releasing its key failed; retries wait for the lease to end", slog.Any("error", err))
		return false
	}
	c.logSend(ctx, send, slog.LevelInfo, "idempotency: the server refused a keyed send before any task existed; key released")
	return true
}

// notBoundBehind logs and returns the 503 of a send whose key the code behind could
// not bind, so that the agent did not run.
func (c core) notBoundBehind(ctx context.Context, send *Send) *failure {
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: the key could not be bound behind the middleware, "+
		"keyed send refused (fail closed)")
	return unavailableFailure()
}

// What each HTTP binding counts as a definite refusal by the server itself, in the
// rule of ambiguity (gRPC's column is in grpcbinding). A hop in front of the server
// (a reverse proxy, a gateway) answers in neither shape, or with 502, 503 and 504.
//
//	JSON-RPC   an HTTP 200 answer with a JSON-RPC error object, whatever its code but
//	           -32000 (the generic server error, which a kit behind this one answers
//	           for "in flight" and "unavailable"): the server refused the call, or
//	           the agent failed before its task existed (a2a-go: -32603).
//	HTTP+JSON  a google.rpc.Status body with a 4xx status but 408 and 409, or 500.
//	both       HTTP 404, 405 and 501, whatever the body: nothing serves the route.
//
// Everything else (2xx without a task or Message, a 502, 503 or 504, a body that is
// not the binding's, a cut, a timeout) leaves the outcome unknown.

// rpcRefuses reports whether a JSON-RPC error code at HTTP 200 is a definite refusal.
func rpcRefuses(code int) bool { return code != codeServerError }

// statusRefuses reports whether an HTTP status, whatever its body, says that nothing
// serves the request's route or method, so nothing ran.
func statusRefuses(status int) bool {
	return status == 404 || status == 405 || status == 501
}

// shapedStatusRefuses reports whether an HTTP+JSON error of status, in the binding's
// own google.rpc.Status shape, is a definite refusal.
func shapedStatusRefuses(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 409 || status == 500 || status == 501
}
