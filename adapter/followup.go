package adapter

import (
	"context"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// FollowUpBinder is an a2asrv.CallInterceptor that binds a keyed follow-up send (a
// SendMessage or SendStreamingMessage whose message names an existing task in
// taskId) to that task as soon as a2a-go receives the request, before a2a-go loads the
// task or appends the message to its history. Install it with
// a2asrv.WithCallInterceptors next to [Executor]. It is safe for concurrent use.
//
// Why: [Executor] binds after a2a-go has loaded the task, and a2a-go v2.4.0 turns any
// executor error on an existing task into a FAILED task. With FollowUpBinder, a
// failed binding (the claim was taken over, or the index failed) is answered with an
// error wrapping [ErrNotBound], the task is left as it was, and the agent does not
// run; [Executor] then finds the key already bound and does not call the index again.
//
// The cost: the key is bound before a2a-go has decided to accept the message. When
// a2a-go then refuses it (the task is unknown or in a terminal state, another
// execution of the task is in progress, the contextId does not match), the first
// attempt gets that refusal, but a retry of the same send gets the task's current
// state (or TaskNotFound), like a retry of an accepted follow-up. A client that must
// tell the two apart checks whether its message is in the task's history.
//
// Requests that are not keyed first sends (no [middleware.ClaimedSend] in the
// context), that name no task, or that are not sends pass through untouched.
type FollowUpBinder struct {
	logger *slog.Logger
}

var _ a2asrv.CallInterceptor = (*FollowUpBinder)(nil)

// NewFollowUpBinder returns a [FollowUpBinder].
func NewFollowUpBinder(opts Options) *FollowUpBinder {
	return &FollowUpBinder{logger: opts.logger()}
}

// Before implements a2asrv.CallInterceptor: it binds a keyed follow-up send and
// returns an error wrapping [ErrNotBound] when that fails.
func (b *FollowUpBinder) Before(ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	if m := callCtx.Method(); m != "SendMessage" && m != "SendStreamingMessage" {
		return ctx, nil, nil
	}
	send, ok := req.Payload.(*a2a.SendMessageRequest)
	if !ok || send.Message == nil || send.Message.TaskID == "" {
		return ctx, nil, nil
	}
	claim, ok := middleware.ClaimedSendFrom(ctx)
	if !ok {
		return ctx, nil, nil
	}
	binding := idempotency.Binding{TaskID: string(send.Message.TaskID)}
	if err := bindClaim(ctx, b.logger, claim, send.Message, binding); err != nil {
		return ctx, nil, err
	}
	return ctx, nil, nil
}

// After implements a2asrv.CallInterceptor; it does nothing.
func (b *FollowUpBinder) After(ctx context.Context, callCtx *a2asrv.CallContext, resp *a2asrv.Response) error {
	return nil
}
