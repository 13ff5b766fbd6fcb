package middleware

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// Sends is the middleware's keyed-send logic for a binding that is not HTTP, such as
// the gRPC interceptors of github.com/a2akit/idempotency/grpcbinding. The checks, the
// claim, the wait for an in-flight first attempt, the settling of a forwarded send
// and the reading of a replay's task are the ones the HTTP middleware runs (it runs
// them through the same code), so every binding answers a keyed send alike, and a
// send made over one binding and retried over another meets the same claim when both
// use the same index. Create it with [NewSends]; it is safe for concurrent use.
//
// A binding reads a keyed send into a [Send] and calls [Sends.Begin]. The [Step] it
// gets says what to do: answer a [Refusal] in the binding's own shape, run the send in
// [Step.Forward] and then call [Sends.Settle] with what it produced, or replay the
// first attempt from [Step.Record] (its Message reply, or its task read through
// [Sends.ReadTask]). The Sends logs every outcome and reports it to Options.Observe,
// except a replay's, which the binding reports with [Sends.Observe] once it answered.
type Sends struct{ m *middleware }

// NewSends returns the keyed-send logic for index, configured and validated as [New]
// does. Options.Scope, MaxBodyBytes and Tasks are read by the HTTP middleware only: a
// binding computes the scope and reads tasks its own way.
func NewSends(index idempotency.KeyIndex, opts Options) (*Sends, error) {
	m, err := newMiddleware(index, opts)
	if err != nil {
		return nil, err
	}
	return &Sends{m: m}, nil
}

// Send is one keyed send, as a binding read it. Begin sets its scope; pass the same
// *Send to every later call for the send.
type Send struct {
	// Binding, Version and Streaming say how the send came; they are logged and
	// reported in each [Event].
	Binding   ProtocolBinding
	Version   ProtocolVersion
	Streaming bool
	// Key is the send's idempotency key, or, when KeyErr is set, the reason the
	// key is malformed (an error of [idempotency.ValidateKey] or
	// [idempotency.ErrKeyNotString], whose text is the refusal's message).
	Key    string
	KeyErr error
	// MessageID is the message's id, which holds the key; empty is refused.
	MessageID string
	// TaskID is the task a follow-up message continues, or empty; it is logged.
	TaskID string
	// RequestID is the request_id of every log line about the send, and of its
	// [Event]; Begin makes one up when it is empty.
	RequestID string

	k       claimKey // set by Begin
	outcome Outcome  // once decided; every later log line names it
	boundBy BoundBy
	t       timing
}

// Step is what [Sends.Begin] decided for a send; exactly one of Refusal, Forward and
// Gone is set, or none, for a replay of Record.
type Step struct {
	// Refusal, when set, is the answer: nothing runs.
	Refusal *Refusal
	// Forward, when set, is the context to run the send in: the key is claimed, and
	// the context carries the claim ([ClaimedSendFrom]) for the code behind (the
	// a2a-go adapter) to bind before the agent runs. Call [Sends.Settle] when the send
	// produced its first answer or failed.
	Forward context.Context
	// Gone reports that the client went away (its context ended) before the send was
	// answered: while the index was asked, while the retry waited, or before its
	// refusal. Answer nothing; the send was observed as [OutcomeAbandoned].
	Gone bool
	// Record is the key's record when the send is a retry to replay: its Reply is the
	// Message to answer again, or else its TaskID names the task to read with
	// [Sends.ReadTask].
	Record idempotency.Record

	claim *ClaimedSend
}

// RefusalKind classifies a [Refusal]; each binding answers a kind with its own code.
type RefusalKind int

// The kinds of refusal, with the answers of the JSON-RPC and HTTP+JSON bindings.
const (
	RefusedInvalid      RefusalKind = iota + 1 // malformed key, no messageId, key reused, bad scope: -32602, 400
	RefusedUnsupported                         // the index cannot honour keys: -32004, 400 UNIMPLEMENTED
	RefusedTaskNotFound                        // the key's task is gone: -32001, 404
	RefusedUnavailable                         // the index failed, or the key could not be bound: 503
	RefusedInFlight                            // the first attempt is in flight, its task unknown: 409
	RefusedInternal                            // the first attempt's answer could not be framed: 500
	RefusedExhausted                           // the index is full: 429 RESOURCE_EXHAUSTED, Retry-After an hour
)

// Refusal is an answer to a keyed send that the kit gives instead of the server.
type Refusal struct {
	Kind RefusalKind
	// Message is the client's text: it says what to do and never carries internal
	// error text.
	Message string
	// RetryAfter is the delay before a retry, for RefusedUnavailable,
	// RefusedExhausted and RefusedInFlight.
	RetryAfter time.Duration
	// Extension reports whether the answer names the extension (in the binding's
	// A2A-Extensions header); it does not when keys cannot be honoured.
	Extension bool
}

// Produced is what a forwarded send produced, as far as the binding saw: its task
// (the id of the first task, status or artifact event), its Message reply (as A2A v1.0
// JSON, the form in which a reply is bound), or a failure. The zero value means that
// the binding could not tell.
type Produced struct {
	TaskID string
	Reply  []byte
	Failed bool
}

// Begin checks the send, claims its key and, when a first attempt holds it, waits for
// that attempt as the HTTP middleware does. scope returns the key's scope; it is
// called only for a well-formed send and an index that can honour keys, and its error
// refuses the send with the error's text.
func (s *Sends) Begin(ctx context.Context, send *Send, scope func() (string, error)) *Step {
	st := s.m.begin(ctx, send, scope)
	step := &Step{Refusal: refusalOf(st.fail, st.ext), Gone: st.gone, Record: st.rec}
	if st.forward {
		step.claim = s.m.core.newClaim(send, st.token)
		step.Forward = withClaimedSend(ctx, step.claim)
	}
	return step
}

// Settle acts, once, on what a forwarded send produced: it binds the key to the task
// or the Message reply (unless the code behind bound it already), or releases the key
// when the send failed before anything existed, so that an identical retry runs. It
// returns a refusal to answer instead of the send's own failure when the code behind
// could not bind the key (the adapter then did not run the agent): the index is
// unavailable, and a retry with the same key may succeed. Call it before the first
// answer reaches the client, so that a client that saw the task finds the key bound.
func (s *Sends) Settle(ctx context.Context, send *Send, step *Step, p Produced) *Refusal {
	c := carry{kind: carryNothing}
	switch {
	case p.Failed:
		c.kind = carryError
	case p.TaskID != "":
		c = carry{kind: carryTask, taskID: p.TaskID}
	case p.Reply != nil:
		c = carry{kind: carryMessage, message: p.Reply}
	}
	if p.Failed && step.claim.hookFailed() {
		s.m.core.settle(ctx, send, step.claim, c)
		f := s.m.core.notBoundBehind(ctx, send)
		s.m.core.observeSend(send, outcomeOr(ctx, OutcomeUnavailable))
		return refusalOf(f, true)
	}
	s.m.core.observeSend(send, s.m.core.settle(ctx, send, step.claim, c))
	return nil
}

// ReadTask reads what a replay answers: the Message reply of the step's record, or
// else its task, read with read as the HTTP middleware reads it: a task that is not
// found while the first attempt may still be running (its claim is younger than the
// lease) is read again until ReplayWait ends and then answered as in flight, and a
// Message reply recorded meanwhile is returned instead. read returns nil when it
// found the task (the caller keeps it), an error wrapping [ErrTaskNotFound] when the
// task does not exist, or another error when it could not be read. running reports
// whether this process still runs an execution of the task (a subscription to it
// opens and stays open, or carries an event): a task not found while it runs is in
// flight at any age of the claim, and with Options.SoleInstance a task not found that
// does not run here is gone at once, so a binding must not leave it out when
// SoleInstance is set. ReadTask returns the Message reply to answer, or a refusal, or
// neither when read found the task.
func (s *Sends) ReadTask(ctx context.Context, send *Send, step *Step, read func(ctx context.Context, taskID string) error, running func(ctx context.Context, taskID string) bool) ([]byte, *Refusal) {
	if step.Record.Reply != nil {
		return step.Record.Reply, nil
	}
	var runs func(string) bool
	if running != nil {
		runs = func(taskID string) bool { return running(ctx, taskID) }
	}
	reply, f := s.m.core.awaitTask(ctx, send, step.Record, func() *failure {
		return s.m.core.taskSourceFailure(ctx, send, step.Record.TaskID, read(ctx, step.Record.TaskID))
	}, runs)
	if f != nil {
		send.outcome = outcomeOr(ctx, failureOutcome(f))
	}
	return reply, refusalOf(f, true)
}

// Observe reports the outcome of a replay to Options.Observe once the binding
// answered it: pass [OutcomeReplayed]. When [Sends.ReadTask] refused the replay, the
// refusal's outcome (task_gone, in_flight, unavailable, internal) is reported
// instead, and [OutcomeAbandoned] when ctx had ended by then. The Sends reports every
// other outcome itself.
func (s *Sends) Observe(send *Send, o Outcome) {
	if send.outcome != "" {
		o = send.outcome
	}
	s.m.core.observeSend(send, o)
}

// Unanswerable returns the refusal for a replay whose task or reply the binding could
// not frame (err says why, and is passed on: it must not carry internal text).
func (s *Sends) Unanswerable(err error) *Refusal {
	return refusalOf(&failure{kind: failInternal, message: "the key's task or reply could not be answered: " + err.Error()}, true)
}

// refusalOf returns f as a Refusal, or nil.
func refusalOf(f *failure, ext bool) *Refusal {
	if f == nil {
		return nil
	}
	kinds := map[failKind]RefusalKind{
		failInvalidParams: RefusedInvalid, failUnsupported: RefusedUnsupported, failTaskNotFound: RefusedTaskNotFound,
		failUnavailable: RefusedUnavailable, failInFlight: RefusedInFlight, failExhausted: RefusedExhausted,
	}
	kind, ok := kinds[f.kind]
	if !ok {
		kind = RefusedInternal
	}
	if f.notFound() {
		kind = RefusedTaskNotFound
	}
	return &Refusal{Kind: kind, Message: f.message, RetryAfter: f.retryAfter, Extension: ext}
}

// taskSourceFailure returns the failure of a read of task taskID that returned err,
// or nil. What a task source fails with describes its store (host names, SQL): it
// goes to the log, and the client gets what it can act on.
func (c core) taskSourceFailure(ctx context.Context, send *Send, taskID string, err error) *failure {
	switch {
	case err == nil:
		return nil
	case errNotFound(err):
		c.logSend(ctx, send, slog.LevelDebug, "idempotency: the key's task was not found by the task source",
			slog.String("task_id", idempotency.LogValue(taskID)), slog.Any("error", err))
		return &failure{kind: failTaskNotFound, message: "the task of this idempotency key no longer exists; " +
			"the agent is not run again for the same key, so send a new message with a fresh key"}
	}
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: the task source could not read the key's task for a replay",
		slog.String("task_id", idempotency.LogValue(taskID)), slog.Any("error", err))
	return &failure{kind: failUnavailable, message: "the task of this idempotency key could not be read; " +
		"retry with the same key and message later", retryAfter: defaultRetryAfter}
}

// beginning is what begin decided: a refusal (fail, ext), a forward with token, a
// replay of rec, or a client gone.
type beginning struct {
	fail    *failure
	ext     bool
	forward bool
	token   idempotency.Token
	rec     idempotency.Record
	gone    bool
}

// begin checks send, asks the core what to do with it, and logs and reports every
// refusal. It sets send's claim key.
func (m *middleware) begin(ctx context.Context, send *Send, scope func() (string, error)) beginning {
	c := m.core
	if send.RequestID == "" {
		send.RequestID = newRequestID()
	}
	// refuse answers f with outcome o, or nothing when the client has gone.
	refuse := func(o Outcome, f *failure, ext bool, level slog.Level, msg string, extra ...slog.Attr) beginning {
		send.outcome = outcomeOr(ctx, o)
		if send.outcome == OutcomeAbandoned {
			level, msg = slog.LevelInfo, "idempotency: client went away before its keyed send was answered"
		}
		c.logSend(ctx, send, level, msg, extra...)
		c.observeSend(send, send.outcome)
		if send.outcome == OutcomeAbandoned {
			return beginning{gone: true}
		}
		return beginning{fail: f, ext: ext}
	}
	invalid := func(o Outcome, f *failure, ext bool) beginning {
		return refuse(o, f, ext, slog.LevelDebug, "idempotency: keyed send refused", slog.String("reason", f.message))
	}
	if send.KeyErr != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: send.KeyErr.Error()}, true)
	}
	if send.MessageID == "" {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: msgNoMessageID}, true)
	}
	start := time.Now()
	honours := m.honours(ctx)
	since(&send.t.index, start)
	if !honours {
		return invalid(OutcomeUnsupported, &failure{kind: failUnsupported, message: msgCannotHonour}, false)
	}
	sc, err := scope()
	if err != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: err.Error()}, true)
	}
	if err := idempotency.CheckLengths(sc, send.MessageID, idempotency.Binding{TaskID: send.TaskID}); err != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: "the keyed send was refused: " +
			strings.TrimPrefix(err.Error(), idempotency.ErrInvalidArgument.Error()+": ") + msgTooLong}, true)
	}
	send.k = claimKey{scope: sc, key: send.Key, messageID: send.MessageID}

	d := c.decide(ctx, send.k, &send.t)
	switch d.kind {
	case decideForward:
		c.logSend(ctx, send, slog.LevelDebug, "idempotency: key claimed, send forwarded",
			slog.String("message_id", idempotency.LogValue(send.MessageID)), slog.String("follow_up_of", idempotency.LogValue(send.TaskID)))
		return beginning{forward: true, token: d.token}
	case decideReplay:
		return beginning{rec: d.rec}
	case decideConflict:
		return refuse(OutcomeConflict, &failure{kind: failInvalidParams, message: msgAlreadyHeld}, true,
			slog.LevelInfo, "idempotency: key reused by a different message, send refused")
	case decideInFlight:
		// Retry-After is the time left on the lease (when the retry may take the claim
		// over), capped at maxInFlightRetryAfter; the log shows both.
		left := time.Until(d.rec.LeaseExpiresAt)
		retry := max(min(left, maxInFlightRetryAfter), time.Second)
		return refuse(OutcomeInFlight, &failure{kind: failInFlight, message: msgInFlight, retryAfter: retry}, true,
			slog.LevelInfo, "idempotency: first attempt still in flight, retry answered 409",
			slog.Duration("lease_left", left.Round(time.Millisecond)), slog.Duration("retry_after", retry))
	case decideUnavailable:
		switch {
		case ctx.Err() == nil && errors.Is(d.err, idempotency.ErrInvalidArgument):
			// A client error: retrying the same send cannot help. The index's text
			// stays in the log.
			return refuse(OutcomeRefused, &failure{kind: failInvalidParams, message: msgIndexRefused}, true, slog.LevelInfo,
				"idempotency: index "+d.op+" refused the keyed send's values", slog.Any("error", d.err))
		case ctx.Err() == nil && errors.Is(d.err, idempotency.ErrFull):
			return refuse(OutcomeUnavailable, &failure{kind: failExhausted, message: msgFull, retryAfter: fullRetryAfter}, true,
				slog.LevelWarn, "idempotency: index full, keyed send refused", slog.Any("error", d.err))
		}
		if ctx.Err() != nil {
			// The client went away while the index was asked: not the index's fault.
			return refuse(OutcomeAbandoned, nil, false, slog.LevelInfo,
				"idempotency: client went away during the index "+d.op+", keyed send not run", slog.Any("error", d.err))
		}
		return refuse(OutcomeUnavailable, unavailableFailure(), true, slog.LevelWarn,
			"idempotency: index "+d.op+" failed, keyed send refused (fail closed)", slog.Any("error", d.err))
	}
	// decideGone
	return refuse(OutcomeAbandoned, nil, false, slog.LevelInfo, "idempotency: client went away while its retry waited for the first attempt")
}

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
	}
	return OutcomeFailed // the server's own error, passed on
}

// settle acts, once, on what a forwarded send produced (c): it binds the key to a
// task or a Message reply, releases it when the send failed before anything
// existed, or leaves it pending (the lease decides) when that cannot be known. It
// returns the send's outcome, and notes what bound the key.
func (c core) settle(ctx context.Context, send *Send, cs *ClaimedSend, cr carry) Outcome {
	o := c.settleKey(ctx, send, cs, cr)
	var bindTime time.Duration
	send.boundBy, bindTime = cs.report()
	send.t.index += bindTime
	return o
}

// settleKey is settle's work on the key, and returns what the client got: nothing
// when it had gone by then (abandoned); else a result (of a stream: its first event)
// or an answer it could not read (claimed), or the server's own error, with the key
// released (released) or not (failed).
func (c core) settleKey(ctx context.Context, send *Send, cs *ClaimedSend, cr carry) Outcome {
	gone := ctx.Err() != nil
	hooked, bound := cs.state()
	switch cr.kind {
	case carryTask, carryUpdate:
		c.bindProduced(ctx, send, cs, idempotency.Binding{TaskID: cr.taskID})
	case carryMessage:
		prev, ok := cs.Bound()
		if ok && len(prev.Reply) > 0 {
			// The code behind recorded the reply itself (the adapter, from the agent's
			// own Message): that record stands, whatever bytes the wire carried.
			break
		}
		b := idempotency.Binding{Reply: cr.message}
		if ok {
			b.TaskID = prev.TaskID
		}
		c.bindProduced(ctx, send, cs, b)
	case carryError:
		switch {
		case bound:
			// The code behind bound a task before failing: retries replay it.
		case cs.holding():
			// The code behind said the send may have had effects (the agent started):
			// releasing could run it twice.
			c.logSend(ctx, send, slog.LevelWarn, "idempotency: keyed send failed after it may have had effects, before "+
				"anything bound its key; the key stays pending until its lease ends")
		case gone && !hooked:
			// The client went away, and nothing tells whether the agent started in
			// the background (a2a-go runs it on a context that outlives the request).
			c.logSend(ctx, send, slog.LevelInfo, "idempotency: client went away during a keyed send before anything bound "+
				"its key; retries wait until code behind the middleware binds it (the adapter does before the "+
				"agent runs) or its lease ends")
		default:
			if c.releaseProduced(ctx, send, cs) && !gone {
				return OutcomeReleased
			}
		}
		if gone {
			return OutcomeAbandoned
		}
		return OutcomeFailed
	default:
		if !bound {
			level := slog.LevelWarn
			if gone {
				level = slog.LevelInfo
			}
			c.logSend(ctx, send, level, "idempotency: could not learn what a keyed send produced from its answer; "+
				"retries wait until code behind the middleware binds the key or its lease ends")
		}
		// An answer the middleware could not read (a stream without a first event,
		// one too large to copy, nothing at all), passed on as it was.
	}
	if gone {
		// The client left before the answer came (a forward goes on without it
		// until the key is bound): it got nothing.
		return OutcomeAbandoned
	}
	return OutcomeClaimed
}

func (c core) bindProduced(ctx context.Context, send *Send, cs *ClaimedSend, b idempotency.Binding) {
	// Detached as the core's index calls after the forward are; the claim bounds the
	// index call by IndexTimeout itself, and makes none when b is bound already.
	if err := cs.bind(context.WithoutCancel(ctx), b, false); err != nil {
		c.logSend(ctx, send, slog.LevelError, "idempotency: could not bind the key to what the send produced; "+
			"retries wait for the lease to end", slog.String("task_id", idempotency.LogValue(b.TaskID)), slog.Any("error", err))
	}
}

// releaseProduced releases the key of a send that failed before a task existed, and
// reports whether it did.
func (c core) releaseProduced(ctx context.Context, send *Send, cs *ClaimedSend) bool {
	if err := c.release(ctx, send.k, cs.Token(), &send.t); err != nil {
		c.logSend(ctx, send, slog.LevelWarn, "idempotency: keyed send failed before a task existed, "+
			"and releasing its key failed; retries wait for the lease to end", slog.Any("error", err))
		return false
	}
	c.logSend(ctx, send, slog.LevelInfo, "idempotency: keyed send failed before a task existed; key released")
	return true
}

// notBoundBehind logs and returns the 503 of a send whose key the code behind could
// not bind, so that the agent did not run.
func (c core) notBoundBehind(ctx context.Context, send *Send) *failure {
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: the key could not be bound behind the middleware, "+
		"keyed send refused (fail closed)")
	return unavailableFailure()
}

// awaitTask reads the task of rec with readOnce, which returns nil when it found the
// task. A task that is not found may be coming or gone: a2a-go stores a task only at
// the agent's first event, and the adapter binds the key before the agent starts.
// While the claim is younger than the lease, awaitTask looks for it again until
// ReplayWait ends, and at the index too, since an agent that answers with a Message
// creates no task at all and its reply is recorded when it answers (that reply is
// returned); then missingTask says which it is.
func (c core) awaitTask(ctx context.Context, send *Send, rec idempotency.Record, readOnce func() *failure, running func(taskID string) bool) ([]byte, *failure) {
	deadline := time.Now().Add(c.replayWait)
	interval := 10 * time.Millisecond
	for {
		f := readOnce()
		switch {
		case f == nil:
			return nil, nil
		case !f.notFound():
			if f.kind == failUnavailable {
				c.logSend(ctx, send, slog.LevelWarn, "idempotency: could not read the key's task for a retry",
					slog.String("task_id", idempotency.LogValue(rec.TaskID)), slog.String("error", f.message))
			}
			return nil, f
		case time.Since(rec.ClaimedAt) >= c.lease || time.Until(deadline) <= 0:
			return nil, c.missingTask(ctx, send, rec, f, running)
		}
		waited := time.Now()
		timer := time.NewTimer(min(interval, time.Until(deadline)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			since(&send.t.wait, waited)
			return nil, f
		}
		since(&send.t.wait, waited)
		interval = min(2*interval, 250*time.Millisecond)
		got, found, err := c.lookup(ctx, send.k, &send.t)
		if err == nil && found && got.MessageID == send.MessageID && got.Reply != nil {
			return got.Reply, nil
		}
	}
}

// missingTask answers a retry whose key is bound to a task that is not found
// (notFound, the TaskNotFound failure): 409 while something may still run the
// first attempt and store the task, TaskNotFound once nothing can. What may run it:
//
//   - an execution of the task in this process, at any age of the claim (an agent
//     may be slower to its first event than the lease): running (a subscription, for
//     the HTTP middleware's executionRunning) tells; nil counts as not running;
//   - an execution in another process sharing the index (a replica, or the process
//     a rolling restart replaces), which cannot be asked: it counts as possible
//     until the claim is as old as the lease, the bound Options.Lease sets on an
//     agent's time to its first event, unless Options.SoleInstance says that no
//     other process runs keyed sends. A restarted sole instance thus answers
//     TaskNotFound at once for the sends its previous process died in before their
//     first event.
//
// Logs name the time left until the task counts as gone.
func (c core) missingTask(ctx context.Context, send *Send, rec idempotency.Record, notFound *failure, running func(taskID string) bool) *failure {
	taskID := slog.String("task_id", idempotency.LogValue(rec.TaskID))
	if running != nil && running(rec.TaskID) {
		c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not stored yet and its execution running here; retry answered 409",
			taskID)
		return &failure{kind: failInFlight, message: msgInFlight, retryAfter: time.Second}
	}
	left := time.Until(rec.ClaimedAt.Add(c.lease))
	if left > 0 && !c.soleInstance {
		retry := max(min(left, maxInFlightRetryAfter), time.Second)
		c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not stored and its execution not running here; "+
			"another process may still run it until the lease ends; retry answered 409",
			taskID, slog.Duration("lease_left", left.Round(time.Millisecond)), slog.Duration("retry_after", retry))
		return &failure{kind: failInFlight, message: msgMaybeElsewhere, retryAfter: retry}
	}
	why := "the claim is older than the lease"
	if left > 0 {
		why = "no other process runs keyed sends (SoleInstance)"
	}
	c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not found and nothing runs it; retry answered TaskNotFound",
		taskID, slog.String("because", why))
	return notFound
}

// observeSend reports send, with outcome o, to Options.Observe, and logs it at
// debug level.
func (c core) observeSend(send *Send, o Outcome) {
	send.outcome = o
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
	if send.outcome != "" {
		attrs = append(attrs, slog.String("outcome", string(send.outcome)))
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
