package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// Options configure [NewExecutor] and [NewFollowUpBinder]. The zero value works.
type Options struct {
	// Logger receives the adapter's logs; default slog.Default(). Keys are logged
	// redacted ([idempotency.RedactKey]).
	Logger *slog.Logger

	// RunUnclaimed makes [Executor] run a keyed message that reaches it without the
	// middleware's claim, logging a warning, instead of refusing it with an error
	// wrapping [ErrUnclaimed]. Set it only when every keyed send passes through the
	// middleware and the claim cannot reach the executor: a2a-go's cluster mode
	// (a2asrv.WithClusterMode), where the middleware binds keys from the responses.
	// [FollowUpBinder], which runs where the request arrived, refuses unclaimed keyed
	// sends whatever RunUnclaimed says.
	RunUnclaimed bool
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// ErrNotBound is wrapped by the error that [Executor] and [FollowUpBinder] return when
// the middleware's claim could not be bound to the task (the claim was taken over
// after its lease ended, or the index failed), and the agent therefore did not run.
// The error also wraps the cause (for example [idempotency.ErrNotOwner]); compare with
// errors.Is. Its text is what a2a-go sends the client, and never includes the cause,
// which may describe the index's storage.
var ErrNotBound = errors.New("the idempotency key of this send could not be bound to its task, " +
	"so the agent did not run; retry the send with the same key and message")

// notBoundError is the error of a failed binding: the text of ErrNotBound, and both
// ErrNotBound and the cause in its chain.
type notBoundError struct{ cause error }

func (e *notBoundError) Error() string   { return ErrNotBound.Error() }
func (e *notBoundError) Unwrap() []error { return []error{ErrNotBound, e.cause} }

// ErrUnclaimed is wrapped by the error that [Executor] and [FollowUpBinder] return for
// a keyed message that reached them without the middleware's claim: it came through a
// binding the middleware does not see (gRPC), or a server that does not put the
// middleware in front of its transports. The agent does not run: nothing would
// deduplicate the send, and the client asked for it to run at most once. The error
// also wraps a2a.ErrUnsupportedOperation, which a2a-go sends as JSON-RPC -32004,
// HTTP+JSON 400 UNIMPLEMENTED or gRPC UNIMPLEMENTED, as the middleware refuses keyed
// sends it cannot honour; its text is what the client reads.
var ErrUnclaimed = errors.New("this endpoint cannot honour the idempotency key of this message, so the server " +
	"refused to run it without deduplication; send it through an interface where the server honours idempotency " +
	"keys (its JSON-RPC or HTTP+JSON one), or without a key")

// unclaimedError is the error of a refused unclaimed keyed message: the text of
// ErrUnclaimed, and both ErrUnclaimed and a2a.ErrUnsupportedOperation in its chain.
type unclaimedError struct{}

func (unclaimedError) Error() string   { return ErrUnclaimed.Error() }
func (unclaimedError) Unwrap() []error { return []error{ErrUnclaimed, a2a.ErrUnsupportedOperation} }

// refuseUnclaimed checks a message that reached the adapter without the middleware's
// claim. It returns nil when msg carries no key, or when run is set (after logging a
// warning), and an error wrapping ErrUnclaimed otherwise. A malformed key counts as a
// key: the middleware would have refused it.
func refuseUnclaimed(ctx context.Context, logger *slog.Logger, msg *a2a.Message, run bool) error {
	if _, keyed, err := MessageKey(msg); !keyed && err == nil {
		return nil
	}
	if run {
		logger.WarnContext(ctx, "adapter: running a keyed message that reached the executor without the middleware's claim; "+
			"it is deduplicated only if the middleware claimed it on the way in", "message_id", idempotency.LogValue(msg.ID))
		return nil
	}
	logger.WarnContext(ctx, "adapter: refused a keyed message that reached the adapter without the middleware's claim "+
		"(a binding the middleware does not see, such as gRPC, or no middleware in front of the transports)",
		"message_id", idempotency.LogValue(msg.ID))
	return unclaimedError{}
}

// errOtherMessage is the cause when a claim in the context names another message than
// the one being executed, which only a broken context chain can produce.
var errOtherMessage = errors.New("adapter: the claim in the request context belongs to another message")

// Executor is an a2asrv.AgentExecutor that takes part in keeping the middleware's
// claim on a keyed send true to what the agent did. Create it with [NewExecutor] and
// pass it to a2asrv.NewHandler in place of the agent. It is safe for concurrent use.
//
// For a keyed first send (the request context carries a [middleware.ClaimedSend])
// of a new task, Execute runs the agent without binding anything: the key is bound
// once the task is stored (by sqlstore/a2atasks in the transaction that stores it,
// by [BindingStore] right after the first save, or else by the middleware from the
// answer's first event), so it never names a task that was not stored. Execute
// does, at the agent's first event:
//
//  1. Tell the middleware that the agent ran ([middleware.ClaimedSend.Hold]): if
//     the send then fails (the first save or its bind failed), the key is not
//     released, since a retry would run the agent again; it stays pending until its
//     lease ends. An agent that fails before its first event has stored nothing, and
//     the middleware releases the key, so that an identical retry runs normally.
//  2. When that event is an *a2a.Message (the agent answered without creating a
//     task), record the Message as the key's reply before passing it on, so that a
//     retry gets the same Message even when the first response was lost. A failure to
//     record it is logged and the Message is still passed on; the middleware then
//     binds the reply it reads from the answer.
//
// A retry before the task is stored (before the agent's first event) waits up to the
// middleware's ReplayWait for the binding and is then answered 409 with
// Retry-After; from the first save on, a retry gets the task at once, in whatever
// state it has reached, even while a long blocking send is still running.
//
// For a follow-up (a message that names an existing task), the task exists, so
// Execute binds the key to it before the agent runs, and does not run the agent when
// that fails: it yields an error wrapping [ErrNotBound] and the cause. a2a-go v2.4.0
// turns any executor error on an existing task into a FAILED task; install
// [FollowUpBinder] so that follow-ups are bound, and refused, before a2a-go changes
// the task. A follow-up's Message reply is not recorded: a2a-go refuses a Message on
// an existing task (the task fails), and a retry gets that task.
//
// The index is called with the executor's context, which a2a-go detaches from the
// request (no deadline, never cancelled by the client); the index must bound its own
// calls.
//
// Unkeyed sends, retries (the middleware answers them without forwarding) and
// cancellations are passed to the agent untouched. The claim is found only through
// the request context, so the middleware must be in front of the a2a-go transport
// handlers. A keyed message without a claim (sent through a binding the middleware
// does not see, such as gRPC) is refused with an error wrapping [ErrUnclaimed], so
// that no path runs a keyed send without deduplication; in a2a-go's cluster mode,
// where the claim does not reach the executor, set [Options.RunUnclaimed].
//
// Why a wrapped executor and not an a2asrv.ExecutorContextInterceptor: an interceptor
// runs before the agent but cannot see the agent's events, which the Message reply
// needs. Executor composes with interceptors: a2asrv.WithExecutorContextInterceptor
// appends to the handler's list (its doc comment says "overrides", but v2.4.0 appends,
// and installs no default interceptor; a2asrv.ReferencedTasksLoader must be added
// explicitly either way).
type Executor struct {
	agent        a2asrv.AgentExecutor
	logger       *slog.Logger
	runUnclaimed bool
}

var (
	_ a2asrv.AgentExecutor         = (*Executor)(nil)
	_ a2asrv.AgentExecutionCleaner = (*Executor)(nil)
)

// NewExecutor returns an [Executor] that runs agent. agent must not be nil.
func NewExecutor(agent a2asrv.AgentExecutor, opts Options) *Executor {
	return &Executor{agent: agent, logger: opts.logger(), runUnclaimed: opts.RunUnclaimed}
}

// Execute implements a2asrv.AgentExecutor; see [Executor] for what it adds.
func (e *Executor) Execute(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	if execCtx.Message == nil {
		return e.agent.Execute(ctx, execCtx)
	}
	claim, ok := middleware.ClaimedSendFrom(ctx)
	if !ok {
		if err := refuseUnclaimed(ctx, e.logger, execCtx.Message, e.runUnclaimed); err != nil {
			return func(yield func(a2a.Event, error) bool) { yield(nil, err) }
		}
		return e.agent.Execute(ctx, execCtx)
	}
	if execCtx.StoredTask != nil {
		// A follow-up: its task exists, so the key is bound to it before the agent
		// runs (FollowUpBinder has bound it already, when installed).
		return func(yield func(a2a.Event, error) bool) {
			binding := idempotency.Binding{TaskID: string(execCtx.TaskID)}
			if err := bindClaim(ctx, e.logger, claim, execCtx.Message, binding); err != nil {
				yield(nil, err)
				return
			}
			for event, err := range e.agent.Execute(ctx, execCtx) {
				if !yield(event, err) {
					return
				}
			}
		}
	}
	return func(yield func(a2a.Event, error) bool) {
		if claim.MessageID() != execCtx.Message.ID {
			yield(nil, bindClaim(ctx, e.logger, claim, execCtx.Message, idempotency.Binding{TaskID: string(execCtx.TaskID)}))
			return
		}
		first := true
		for event, err := range e.agent.Execute(ctx, execCtx) {
			if first && err == nil && event != nil {
				first = false
				// The agent has produced something: from now on a failure of the send
				// must not release the key.
				claim.Hold()
				if msg, ok := event.(*a2a.Message); ok {
					e.recordReply(ctx, claim, msg)
				}
			}
			if !yield(event, err) {
				return
			}
		}
	}
}

// recordReply binds the agent's Message reply to the claim. A failure is logged only:
// the Message is passed on either way, and the middleware binds the reply it reads
// from the answer.
func (e *Executor) recordReply(ctx context.Context, claim *middleware.ClaimedSend, msg *a2a.Message) {
	reply, err := json.Marshal(msg)
	if err == nil {
		err = claim.Bind(ctx, idempotency.Binding{Reply: reply})
	}
	if err != nil {
		e.logger.ErrorContext(ctx, "adapter: could not record the agent's Message reply; the middleware will bind the reply it "+
			"reads from the answer, and if it cannot either, the key stays pending until its lease ends",
			claimAttrs(claim, "", err)...)
	}
}

// Cancel implements a2asrv.AgentExecutor: it passes the cancellation to the agent.
func (e *Executor) Cancel(ctx context.Context, execCtx *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return e.agent.Cancel(ctx, execCtx)
}

// Cleanup implements a2asrv.AgentExecutionCleaner: it calls the agent's Cleanup when
// the agent implements a2asrv.AgentExecutionCleaner, and does nothing otherwise. When
// the binding failed, err wraps [ErrNotBound].
func (e *Executor) Cleanup(ctx context.Context, execCtx *a2asrv.ExecutorContext, result a2a.SendMessageResult, err error) {
	if c, ok := e.agent.(a2asrv.AgentExecutionCleaner); ok {
		c.Cleanup(ctx, execCtx, result, err)
	}
}

// claimAttrs are the attributes of a log line about claim: the request_id and the
// redacted key the middleware's lines about the send carry too, and taskID and err.
// The scope and task id, which clients choose, are cut ([idempotency.LogValue]).
func claimAttrs(claim *middleware.ClaimedSend, taskID string, err error) []any {
	return []any{"request_id", claim.RequestID(), "key", idempotency.RedactKey(claim.Key()),
		"scope", idempotency.LogValue(claim.Scope()), "task_id", idempotency.LogValue(taskID), "error", err}
}

// bindClaim binds claim for msg, and returns an error wrapping ErrNotBound when that
// fails.
func bindClaim(ctx context.Context, logger *slog.Logger, claim *middleware.ClaimedSend, msg *a2a.Message, b idempotency.Binding) error {
	err := errOtherMessage
	if claim.MessageID() == msg.ID {
		err = claim.Bind(ctx, b)
	}
	if err != nil {
		logger.WarnContext(ctx, "adapter: idempotency key not bound; the agent will not run", claimAttrs(claim, b.TaskID, err)...)
		return &notBoundError{cause: fmt.Errorf("bind task %s: %w", b.TaskID, err)}
	}
	return nil
}
