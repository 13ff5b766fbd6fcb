package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// TaskReaderOptions configure [NewTaskReader]. The zero value reads tasks as an
// anonymous caller.
type TaskReaderOptions struct {
	// User returns the user that the retry r is made by, as the server's
	// authentication would set it on a2asrv.CallContext.User for the same request. The
	// default (nil, or a nil *a2asrv.User) is an unauthenticated user with an empty
	// name. ReadTask fails with an error that wraps User's; return one wrapping
	// [middleware.ErrTaskNotFound] to answer as if the task did not exist.
	User func(ctx context.Context, r *http.Request) (*a2asrv.User, error)

	// Logger receives the text of the store's (and User's) errors, which ReadTask
	// keeps out of the text of its own errors; default slog.Default().
	Logger *slog.Logger
}

// TaskReader is a [middleware.TaskSource] over an a2a-go taskstore.Store: set it as
// [middleware.Options.Tasks] to answer retries from the store directly, instead of
// through a GetTask request sent to the wrapped handler. Create it with
// [NewTaskReader]; it is safe for concurrent use when the store is.
//
// The store must be the one the a2a-go handler writes to, so pass it to the handler
// explicitly (a2asrv.WithTaskStore): the default store of a2asrv.NewHandler cannot be
// reached from outside.
//
// Authorization: the GetTask round trip applies the server's own authorization (its
// a2asrv.CallInterceptors) to the retry; a TaskReader does not run them. It calls the
// store with a context carrying what a2a-go would have attached: the tenant (through
// a2a.AttachTenant), and an a2asrv.CallContext with the request headers as service
// parameters and the user from [TaskReaderOptions.User]. A store that checks
// ownership (a2a-go's in-memory store with a2asrv.NewTaskStoreAuthenticator compares
// the task's owner with CallContext.User.Name) then sees the same user as it did when
// the task was created, provided User reproduces it; with the default, only tasks
// created by unauthenticated callers are found. The tenant cannot be set on the
// CallContext (a2a-go keeps it unexported), so a store that partitions by
// CallContext.Tenant() sees the empty tenant; read a2a.TenantFrom instead.
type TaskReader struct {
	store  taskstore.Store
	user   func(ctx context.Context, r *http.Request) (*a2asrv.User, error)
	logger *slog.Logger
}

var _ middleware.TaskSource = (*TaskReader)(nil)

// NewTaskReader returns a [TaskReader] over store. store must not be nil.
func NewTaskReader(store taskstore.Store, opts TaskReaderOptions) *TaskReader {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &TaskReader{store: store, user: opts.User, logger: logger}
}

// ReadTask implements [middleware.TaskSource]: it returns the task taskID as A2A
// v1.0 JSON (json.Marshal of the stored *a2a.Task, with its full history). A task the
// store does not have, or hides from the caller (a2a.ErrTaskNotFound,
// a2a.ErrUnauthenticated, a2a.ErrUnauthorized), returns an error wrapping
// [middleware.ErrTaskNotFound]. Any other failure of the store or of
// [TaskReaderOptions.User] is logged, and returned wrapped in an error whose own
// text says only that the task could not be read: the store's text (a host name, a
// SQL statement) must not reach the client whose retry is answered. errors.Is and
// errors.As still find the cause.
func (tr *TaskReader) ReadTask(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error) {
	user := &a2asrv.User{}
	if tr.user != nil {
		u, err := tr.user(ctx, r)
		if err != nil {
			return nil, tr.fail(ctx, taskID, "the caller of the retry could not be identified", err)
		}
		if u != nil {
			user = u
		}
	}
	if tenant != "" {
		ctx = a2a.AttachTenant(ctx, tenant)
	}
	ctx, callCtx := a2asrv.NewCallContext(ctx, a2asrv.NewServiceParams(r.Header))
	callCtx.User = user

	stored, err := tr.store.Get(ctx, a2a.TaskID(taskID))
	switch {
	case errors.Is(err, a2a.ErrTaskNotFound), errors.Is(err, a2a.ErrUnauthenticated), errors.Is(err, a2a.ErrUnauthorized):
		return nil, &readError{text: "adapter: read task: " + middleware.ErrTaskNotFound.Error(), causes: []error{middleware.ErrTaskNotFound, err}}
	case err != nil:
		return nil, tr.fail(ctx, taskID, "the task store failed", err)
	case stored == nil || stored.Task == nil:
		return nil, tr.fail(ctx, taskID, "the task store failed", errors.New("the store returned neither a task nor an error"))
	}
	return json.Marshal(stored.Task)
}

// fail logs cause and returns an error saying what failed (why) that wraps cause
// without its text.
func (tr *TaskReader) fail(ctx context.Context, taskID, why string, cause error) error {
	tr.logger.WarnContext(ctx, "adapter: could not read a task for a replay: "+why,
		"task_id", idempotency.LogValue(taskID), "error", cause)
	text := "adapter: read task: " + why
	if cerr := ctx.Err(); cerr != nil && errors.Is(cause, cerr) {
		text += ": " + cerr.Error()
	}
	return &readError{text: text, causes: []error{cause}}
}

// readError is an error of ReadTask: text for whoever shows it, causes for
// errors.Is and errors.As.
type readError struct {
	text   string
	causes []error
}

func (e *readError) Error() string   { return e.text }
func (e *readError) Unwrap() []error { return e.causes }
