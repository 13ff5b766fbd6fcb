package middleware

import (
	"context"
	"time"

	"github.com/a2akit/idempotency"
)

// Sends is the engine: the lifecycle of a keyed send (check, claim, wait, forward,
// keep the lease, settle, replay) in one place, for every binding. The HTTP middleware
// ([New]) and the gRPC interceptors of github.com/a2akit/idempotency/grpcbinding are
// its clients, through this same API, so every binding answers a keyed send alike,
// keeps a running send's lease alike, and a send made over one binding and retried
// over another meets the same claim when both use the same index. Create it with
// [NewSends]; it is safe for concurrent use. The states and transitions are in the
// package documentation ("The engine").
//
// A binding reads a keyed send into a [Send] and calls [Sends.Begin]. The [Step] it
// gets says what to do: answer a [Refusal] in the binding's own shape; or run the
// send in [Step.Forward], call [Sends.Settle] with what its answer showed
// ([Produced]), and call [Step.Done] when the forward returned; or replay the first
// attempt from [Step.Record] (its Message reply, or its task read through
// [Sends.ReadTask]). While a forward runs unbound, the engine extends its claim's
// lease with [idempotency.KeyIndex.Extend] (every third of the lease, with jitter),
// and retries in this process never take the claim over. The Sends logs every
// outcome and reports it to Options.Observe, except a replay's, which the binding
// reports with [Sends.Observe] once it answered.
type Sends struct{ m *middleware }

// NewSends returns the engine for index, configured and validated as [New] does.
// Options.Scope, Principal, CheckContent, MaxBodyBytes, Reads, EarlyBind and Tasks
// are read by the HTTP middleware only: a binding computes the scope, the caller and
// the fingerprint (Send.Principal, Send.Fingerprint) and reads tasks its own way.
func NewSends(index idempotency.KeyIndex, opts Options) (*Sends, error) {
	m, err := newMiddleware(index, opts)
	if err != nil {
		return nil, err
	}
	return m.sends, nil
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
	// Principal is the caller the key is bound to, or empty when keys are not bound
	// to callers: a retry by another principal is answered as a key held by another
	// message. Fingerprint is the message's content digest ([MessageFingerprint]) when
	// the binding checks content, or empty: a retry whose content differs is
	// answered so too. Both may be set by the scope function given to Begin.
	Principal, Fingerprint string
	// RequestID is the request_id of every log line about the send, and of its
	// [Event]; Begin makes one up when it is empty.
	RequestID string

	k       claimKey    // set by Begin
	outcome sendOutcome // once decided; every later log line names it
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
	// a2a-go adapter) to bind before the agent runs. Call [Sends.Settle] when the
	// send's answer showed what it produced, and [Step.Done] when it returned.
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
	keep  *leaseKeeper
	live  func() // leaves the live forwards of this process
}

// Done reports that the forward of a claimed send returned: the engine stops
// extending its lease (a key still pending then is left to its lease) and this
// process no longer counts the forward as alive. Call it once, after [Sends.Settle]
// (defer it); it does nothing for a step that forwarded nothing.
func (st *Step) Done() {
	if st == nil || st.claim == nil {
		return
	}
	st.keep.stop()
	if st.live != nil {
		st.live()
		st.live = nil
	}
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
	RefusedUnreplayable                        // the first attempt ran, its reply cannot be replayed: -32603, 500 DATA_LOSS
)

// Refusal is an answer to a keyed send that the kit gives instead of the server.
type Refusal struct {
	Kind RefusalKind
	// Reason is the kit's own ErrorInfo reason, in [ReasonDomain] (ReasonKeyReused,
	// say): bindings send it beside A2A's.
	Reason string
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

// FromFirstAttempt reports whether r, answering a retry, is news of the first
// attempt rather than a refusal: its task is gone, or its reply cannot be replayed.
// Such an answer carries the replay marker ([idempotency.ReplayedHeader]) as a replay does.
func (r *Refusal) FromFirstAttempt() bool {
	return r.Kind == RefusedTaskNotFound || r.Kind == RefusedUnreplayable
}

// Produced is what the answer of a forwarded send showed, read by its binding: the
// task it names (of a Task, or of a status or artifact update), the agent's Message
// reply (as A2A v1.0 JSON, the form in which a reply is bound), a definite refusal
// by the server itself, or that the server answered with more than a bound lets the
// binding read or the index store. The zero value means that the outcome is unknown
// (a transport error, a hop's 502 or 504, a timeout, an answer the binding could
// not read): the key then stays pending. See "The rule of ambiguity" in the package
// documentation for what each binding counts as a definite refusal.
type Produced struct {
	TaskID string
	Reply  []byte
	// Refused: the server itself refused the send before any task existed, in the
	// binding's own shape (a JSON-RPC error, an HTTP+JSON 4xx, a gRPC status) with a
	// code that means nothing ran. The key is released.
	Refused bool
	// PastBound: the server answered, so the send ran, but what it produced is past a
	// bound (an answer too large to read, a reply or task id too long to store). The
	// key is bound to a marker: a retry gets "cannot be replayed", never a second run.
	PastBound bool

	update bool     // TaskID is that of a status or artifact update, not of a Task
	fail   *failure // the server's error, framed to be passed on
}

// Begin checks the send, claims its key and, when a first attempt holds it, waits for
// that attempt. scope returns the key's scope, and may set send's Principal and
// Fingerprint, which are read after it; it is called only for a well-formed send and
// an index that can honour keys, and its error refuses the send with the error's
// text. A claimed send's Step has Forward set; from then on the engine
// extends the claim's lease until the send is settled or [Step.Done] is called.
func (s *Sends) Begin(ctx context.Context, send *Send, scope func() (string, error)) *Step {
	c := s.m.core
	st := c.begin(ctx, send, scope, s.m.honours)
	if st.claim != nil {
		st.live = c.live.add(send.k.waitKey())
		st.keep = c.keepLease(send, st.claim, renewEvery(c.lease))
		st.Forward = withClaimedSend(ctx, st.claim)
	}
	return st
}

// Honours reports whether the index can honour keys, as Begin asks it: a binding
// lists the extension on the agent cards it serves (the extended card of gRPC, say)
// only when it does.
func (s *Sends) Honours(ctx context.Context) bool { return s.m.honours(ctx) }

// Settle acts, once, on what a forwarded send's answer showed, by the rule of
// ambiguity: it binds the key to the task or the Message reply (unless the code
// behind bound it already), binds it to the "cannot be replayed" marker when what
// the send produced is past a bound, releases it when the server refused the send,
// and otherwise leaves it pending (the lease decides). Binding or releasing stops
// the lease's extension. It returns a refusal to answer instead of the send's own
// failure when the code behind could not bind the key (the adapter then did not run
// the agent): the index is unavailable, and a retry with the same key may succeed.
// Call it before the first answer reaches the client, so that a client that saw the
// task finds the key bound.
func (s *Sends) Settle(ctx context.Context, send *Send, step *Step, p Produced) *Refusal {
	o, notBound := s.m.core.settle(ctx, send, step, p)
	if notBound != nil {
		o = outcomeOr(ctx, OutcomeUnavailable)
	}
	s.m.core.observeSend(send, o)
	return refusalOf(notBound, true)
}

// ReadTask reads what a replay answers: the Message reply of the step's record, or
// else its task, read with read: a task that is not found while the first attempt
// may still be running (its claim is younger than the lease) is read again until
// ReplayWait ends and then answered as in flight, and a Message reply recorded
// meanwhile is returned instead. read returns nil when it found the task (the
// caller keeps it), an error wrapping [ErrTaskNotFound] when the task does not
// exist, or another error when it could not be read. running reports whether this
// process still runs an execution of the task (a subscription to it opens and stays
// open, or carries an event): a task not found while it runs is in flight at any age
// of the claim, and with Options.SoleInstance a task not found that does not run
// here is gone at once, so a binding must not leave it out when SoleInstance is set.
// ReadTask returns the Message reply to answer, or a refusal, or neither when read
// found the task.
func (s *Sends) ReadTask(ctx context.Context, send *Send, step *Step, read func(ctx context.Context, taskID string) error, running func(ctx context.Context, taskID string) bool) ([]byte, *Refusal) {
	c := s.m.core
	if step.Record.Reply != nil {
		return step.Record.Reply, nil
	}
	var runs func(string) bool
	if running != nil {
		runs = func(taskID string) bool { return running(ctx, taskID) }
	}
	reply, f := c.awaitTask(ctx, send, step.Record, func() *failure {
		return c.taskSourceFailure(ctx, send, step.Record.TaskID, read(ctx, step.Record.TaskID))
	}, runs)
	if f != nil {
		send.outcome.set(outcomeOr(ctx, failureOutcome(f)))
	}
	return reply, refusalOf(f, true)
}

// Observe reports the outcome of a replay to Options.Observe once the binding
// answered it: pass [OutcomeReplayed]. When [Sends.ReadTask] refused the replay, the
// refusal's outcome (task_gone, in_flight, unavailable, internal) is reported
// instead, and [OutcomeAbandoned] when ctx had ended by then. The Sends reports every
// other outcome itself.
func (s *Sends) Observe(send *Send, o Outcome) {
	if decided := send.outcome.get(); decided != "" {
		o = decided
	}
	s.m.core.observeSend(send, o)
}

// Unanswerable returns the refusal for a replay whose task or reply the binding could
// not frame. err says why, for the log; the client gets what it can act on.
func (s *Sends) Unanswerable(send *Send, err error) *Refusal {
	s.m.core.logSend(context.Background(), send, levelError, "idempotency: the key's task or reply could not be put in the retry's shape",
		attrError(err))
	return refusalOf(&failure{kind: failInternal, message: msgUnanswerable}, true)
}

// refusalOf returns f as a Refusal, or nil.
func refusalOf(f *failure, ext bool) *Refusal {
	if f == nil {
		return nil
	}
	kinds := map[failKind]RefusalKind{
		failInvalidParams: RefusedInvalid, failUnsupported: RefusedUnsupported, failTaskNotFound: RefusedTaskNotFound,
		failUnavailable: RefusedUnavailable, failInFlight: RefusedInFlight, failExhausted: RefusedExhausted,
		failUnreplayable: RefusedUnreplayable,
	}
	kind, ok := kinds[f.kind]
	if !ok {
		kind = RefusedInternal
	}
	if f.notFound() {
		kind = RefusedTaskNotFound
	}
	return &Refusal{Kind: kind, Reason: f.kitReason(), Message: f.message, RetryAfter: f.retryAfter, Extension: ext}
}
