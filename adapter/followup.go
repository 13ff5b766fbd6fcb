package adapter

import (
	"context"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// FollowUpBinder is an a2asrv.CallInterceptor that binds a keyed follow-up send (a
// SendMessage or SendStreamingMessage whose message names an existing task in
// taskId) to that task as soon as a2a-go receives the request, before a2a-go appends
// the message to the task's history. Install it with a2asrv.WithCallInterceptors next
// to [Executor], after the interceptors that authenticate the caller. It is safe for
// concurrent use.
//
// Why: [Executor] binds after a2a-go has loaded the task, and a2a-go v2.4.0 turns any
// executor error on an existing task into a FAILED task. With FollowUpBinder, a
// failed binding (the claim was taken over, or the index failed) is answered with an
// error wrapping [ErrNotBound], the task is left as it was, and the agent does not
// run; [Executor] then finds the key already bound and does not call the index again.
//
// FollowUpBinder binds only a follow-up that a2a-go will accept: it first reads the
// task from the task store the handler uses, and binds when the task exists, is not in
// a terminal state and, when the message names a contextId, belongs to that context,
// which are a2a-go's own checks. A follow-up that fails them is passed on unbound;
// a2a-go refuses it and the middleware releases the key, so a refused send holds no
// key (keyed follow-ups to tasks that do not exist cannot fill a scope). When the
// store read fails, the follow-up is passed on unbound too, and [Executor] binds it
// if a2a-go accepts it. One race remains: when the task finishes, or another
// execution of it starts, between the read and a2a-go's own checks, a2a-go refuses
// the send while the key is bound to the task, and a retry of the same send gets the
// task's current state, as a retry of an accepted follow-up would. A client that must
// tell the two apart checks whether its message is in the task's history.
//
// A keyed send that reaches FollowUpBinder without the middleware's claim (through a
// binding the middleware does not see, such as gRPC) is refused with an error wrapping
// [ErrUnclaimed] before a2a-go loads or changes anything, whatever
// [Options.RunUnclaimed] says: refused later, by [Executor], a follow-up would fail its
// task.
//
// Requests that are not sends, unkeyed sends, and keyed first sends that name no task
// pass through untouched.
type FollowUpBinder struct {
	tasks  taskstore.Store
	logger *slog.Logger
}

var _ a2asrv.CallInterceptor = (*FollowUpBinder)(nil)

// NewFollowUpBinder returns a [FollowUpBinder] that reads tasks from tasks, the task
// store the a2a-go handler writes to (pass it to the handler with
// a2asrv.WithTaskStore: the default store of a2asrv.NewHandler cannot be reached from
// outside). tasks must not be nil.
func NewFollowUpBinder(tasks taskstore.Store, opts Options) *FollowUpBinder {
	if tasks == nil {
		panic("adapter: NewFollowUpBinder with a nil task store")
	}
	return &FollowUpBinder{tasks: tasks, logger: opts.logger()}
}

// Before implements a2asrv.CallInterceptor: it binds a keyed follow-up send that
// a2a-go will accept, and returns an error wrapping [ErrNotBound] when that fails, or
// [ErrUnclaimed] for a keyed send without the middleware's claim.
func (b *FollowUpBinder) Before(ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	if m := callCtx.Method(); m != "SendMessage" && m != "SendStreamingMessage" {
		return ctx, nil, nil
	}
	send, ok := req.Payload.(*a2a.SendMessageRequest)
	if !ok || send.Message == nil {
		return ctx, nil, nil
	}
	claim, ok := middleware.ClaimedSendFrom(ctx)
	if !ok {
		return ctx, nil, refuseUnclaimed(ctx, b.logger, send.Message, false)
	}
	if send.Message.TaskID == "" || !b.accepts(ctx, send.Message) {
		return ctx, nil, nil
	}
	binding := idempotency.Binding{TaskID: string(send.Message.TaskID)}
	if err := bindClaim(ctx, b.logger, claim, send.Message, binding); err != nil {
		return ctx, nil, err
	}
	return ctx, nil, nil
}

// accepts reports whether a2a-go will accept msg as a follow-up of the task it names,
// as far as the task store tells now.
func (b *FollowUpBinder) accepts(ctx context.Context, msg *a2a.Message) bool {
	stored, err := b.tasks.Get(ctx, msg.TaskID)
	if err != nil || stored == nil || stored.Task == nil {
		return false
	}
	task := stored.Task
	return !task.Status.State.Terminal() && (msg.ContextID == "" || msg.ContextID == task.ContextID)
}

// After implements a2asrv.CallInterceptor; it does nothing.
func (b *FollowUpBinder) After(ctx context.Context, callCtx *a2asrv.CallContext, resp *a2asrv.Response) error {
	return nil
}
