package grpcbinding

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// Interceptors make the keyed sends of an A2A gRPC service idempotent: a gRPC
// SendMessage or SendStreamingMessage gets every answer that package middleware gives
// on JSON-RPC and HTTP+JSON, through the same claim, wait, replay and release logic
// ([middleware.Sends]), so that a send first made over one binding and retried over
// another (in the same scope, on the same index) meets the same claim. Create them
// with [New] and install them with [Interceptors.ServerOptions], or
// [Interceptors.Unary] and [Interceptors.Stream] in a chain of your own. They are
// safe for concurrent use.
//
// The service must be a2a-go's generated a2apb.A2AServiceServer (a2agrpc.Handler, or
// any implementation of it): replays call its GetTask and SubscribeToTask with the
// retry's own context, so that the server's authorization (a2asrv.CallInterceptors)
// applies to them. Put the interceptors last in the chain, after authentication, so
// that the retry's context carries what authentication added. Other methods and
// services pass through untouched, as do unkeyed sends. A send is keyed by its
// message's metadata, or by the "idempotency-key" request metadata (the HTTP
// bindings' Idempotency-Key header): honoured alone; with both, they must be equal
// (idempotency.KeyOfSend). GetExtendedAgentCard's card lists the extension as the
// public card does, when the index can honour keys.
//
// Every answer served from a first attempt (a replay, an attach, the task gone, the
// reply not replayable) carries the header metadata "idempotent-replayed: true"; a
// first send's answer and a refusal never do.
//
// What a client sees, beyond the server's own answers (a first send, and a send
// replayed from its first attempt's task or Message reply):
//
//   - a malformed key, a send without a messageId, a key reused by another message
//     (the message says "already held"), or a Scope error: INVALID_ARGUMENT,
//     reason INVALID_PARAMS;
//   - an index that cannot honour keys: FAILED_PRECONDITION, reason
//     UNSUPPORTED_OPERATION, as A2A's gRPC binding (and a2a-go) answer an unsupported
//     operation;
//   - the index failed, timed out or is full, or the adapter could not bind the key
//     before the agent ran: UNAVAILABLE, reason SERVER_ERROR;
//   - the first attempt is still in flight and its task not known yet: UNAVAILABLE,
//     reason SERVER_ERROR (never ABORTED, A2A v1.1's generation mismatch);
//   - the key's task was deleted: NOT_FOUND, reason TASK_NOT_FOUND.
//
// Every status carries a google.rpc.ErrorInfo in the domain a2a-protocol.org, with the
// reasons of the JSON-RPC and HTTP+JSON answers, last (a2a-go's gRPC client types a
// status by its last ErrorInfo), and before it one in middleware.ReasonDomain with
// the kit's own reason (middleware.ReasonInFlight, say). UNAVAILABLE also carries
// the delay before a retry three ways: a google.rpc.RetryInfo detail, a retry-after
// trailer in seconds, and retryAfterSeconds in the ErrorInfo metadata. Every answer
// to a keyed send the interceptors handled names the extension in the a2a-extensions
// response header, except the refusal for an index that cannot honour keys.
//
// A streaming send whose first attempt failed because the adapter could not bind its
// key ends with UNAVAILABLE too: unlike an HTTP stream, a gRPC stream's status comes
// after its events.
type Interceptors struct {
	sends        *middleware.Sends
	scope        func(ctx context.Context, tenant string) (string, error)
	principal    func(ctx context.Context) (string, error)
	checkContent bool
	tasks        middleware.TaskSource
	log          *slog.Logger
}

// New returns the interceptors for keyed sends recorded in index. It validates opts
// as [middleware.New] does. A nil index, or one that reports through
// [idempotency.Honouring] that it cannot honour keys, makes them refuse keyed sends;
// unkeyed sends pass as before.
func New(index idempotency.KeyIndex, opts Options) (*Interceptors, error) {
	sends, err := middleware.NewSends(index, middleware.Options{
		Lease: opts.Lease, SoleInstance: opts.SoleInstance, ReplayWait: opts.ReplayWait, IndexTimeout: opts.IndexTimeout,
		Logger: opts.Logger, Observe: opts.Observe,
	})
	if err != nil {
		return nil, fmt.Errorf("grpcbinding: %w", err)
	}
	scope := opts.Scope
	if scope == nil {
		scope = func(_ context.Context, tenant string) (string, error) { return middleware.TenantScope(tenant), nil }
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Interceptors{sends: sends, scope: scope, principal: opts.Principal, checkContent: opts.CheckContent,
		tasks: opts.Tasks, log: log}, nil
}

// ServerOptions returns grpc.ChainUnaryInterceptor(i.Unary()) and
// grpc.ChainStreamInterceptor(i.Stream()), for grpc.NewServer. Pass them after the
// options of interceptors that must run first (authentication).
func (i *Interceptors) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(i.Unary()), grpc.ChainStreamInterceptor(i.Stream())}
}

// Unary returns the interceptor for SendMessage, and for GetExtendedAgentCard (whose
// card lists the extension as the public card does).
func (i *Interceptors) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == a2apb.A2AService_GetExtendedAgentCard_FullMethodName {
			res, err := handler(ctx, req)
			if card, ok := res.(*a2apb.AgentCard); ok && err == nil {
				i.extendedCard(ctx, card)
			}
			return res, err
		}
		in, ok := req.(*a2apb.SendMessageRequest)
		svc, isA2A := info.Server.(a2apb.A2AServiceServer)
		if info.FullMethod != a2apb.A2AService_SendMessage_FullMethodName || !ok || !isA2A {
			return handler(ctx, req)
		}
		x, keyed := i.newCall(ctx, in, info.FullMethod, svc, false)
		if !keyed {
			return handler(ctx, req)
		}
		return x.unary(handler)
	}
}

// Stream returns the interceptor for SendStreamingMessage. It decides when the
// service reads the request from the stream, so that an unkeyed stream is read once,
// into the service's own message: a refusal or a replay ends that read with an error
// the interceptor turns back into the call's own end, and the service does not run.
// Stream interceptors after it in the chain see that error; put it last.
func (i *Interceptors) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		svc, isA2A := srv.(a2apb.A2AServiceServer)
		if info.FullMethod != a2apb.A2AService_SendStreamingMessage_FullMethodName || !isA2A {
			return handler(srv, ss)
		}
		ks := &keyedStream{ServerStream: ss, i: i, svc: svc, method: info.FullMethod}
		return ks.finish(handler(srv, ks))
	}
}

// call is one keyed send on its way through the interceptors.
type call struct {
	i       *Interceptors
	ctx     context.Context
	in      *a2apb.SendMessageRequest
	method  string
	svc     a2apb.A2AServiceServer
	send    middleware.Send
	ss      grpc.ServerStream // of a streaming send
	history *int32
	// headerSet is set once the response header metadata is set.
	headerSet bool
}

// newCall reads the send in in, and reports whether it is keyed (with a key, or with
// one that is malformed).
func (i *Interceptors) newCall(ctx context.Context, in *a2apb.SendMessageRequest, method string, svc a2apb.A2AServiceServer, streaming bool) (*call, bool) {
	key, ok, err := keyOfCall(ctx, in.GetMessage())
	if !ok && err == nil {
		return nil, false
	}
	var history *int32
	if cfg := in.GetConfiguration(); cfg != nil {
		history = cfg.HistoryLength
	}
	return &call{i: i, ctx: ctx, in: in, method: method, svc: svc, history: history,
		send: middleware.Send{
			Key: key, KeyErr: err, MessageID: in.GetMessage().GetMessageId(), TaskID: in.GetMessage().GetTaskId(),
			Binding: middleware.BindingGRPC, Version: middleware.Version10, Streaming: streaming,
		}}, true
}

// begin asks the core what to do with the send.
func (x *call) begin() *middleware.Step {
	return x.i.sends.Begin(x.ctx, &x.send, x.identify)
}

func (x *call) unary(handler grpc.UnaryHandler) (any, error) {
	step := x.begin()
	switch {
	case step.Refusal != nil:
		return nil, x.refuse(step.Refusal)
	case step.Gone:
		return nil, status.FromContextError(x.ctx.Err()).Err()
	case step.Forward != nil:
		defer step.Done()
		x.header()
		res, err := handler(step.Forward, x.in)
		p := failed(err)
		if out, ok := res.(*a2apb.SendMessageResponse); ok && err == nil {
			p = x.produced(out.GetTask(), nil, nil, out.GetMessage())
		}
		if r := x.i.sends.Settle(x.ctx, &x.send, step, p); r != nil {
			return nil, x.refuse(r)
		}
		return res, err
	}
	defer x.i.sends.Observe(&x.send, middleware.OutcomeReplayed)
	reply, task, err := x.replay(step)
	if err != nil {
		return nil, err
	}
	x.servedFromFirstAttempt()
	if reply != nil {
		return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Message{Message: reply}}, nil
	}
	return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: task}}, nil
}

// replayStream answers a streaming retry: the task first, then, while it runs, its
// live events as SubscribeToTask gives them; a task that has finished (a2a-go then
// refuses the subscription) is answered alone, and a Message reply again.
func (x *call) replayStream(step *middleware.Step) error {
	defer x.i.sends.Observe(&x.send, middleware.OutcomeReplayed)
	if step.Record.Reply == nil {
		sub := &subscribeStream{ServerStream: x.ss, x: x}
		err := x.svc.SubscribeToTask(&a2apb.SubscribeToTaskRequest{Tenant: x.in.GetTenant(), Id: step.Record.TaskID}, sub)
		if sub.sent || x.ctx.Err() != nil {
			return err
		}
	}
	reply, task, err := x.replay(step)
	if err != nil {
		return err
	}
	x.servedFromFirstAttempt()
	if reply != nil {
		return x.ss.SendMsg(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Message{Message: reply}})
	}
	return x.ss.SendMsg(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: task}})
}

// produced returns what an answer of the service carries for the core.
func (x *call) produced(task *a2apb.Task, su *a2apb.TaskStatusUpdateEvent, au *a2apb.TaskArtifactUpdateEvent, msg *a2apb.Message) middleware.Produced {
	switch {
	case task != nil:
		return middleware.Produced{TaskID: task.GetId()}
	case su != nil:
		return middleware.Produced{TaskID: su.GetTaskId()}
	case au != nil:
		return middleware.Produced{TaskID: au.GetTaskId()}
	case msg != nil:
		reply, err := marshalJSON(msg)
		if err != nil {
			// The agent answered (so it ran) with what the kit cannot keep.
			return middleware.Produced{PastBound: true}
		}
		return middleware.Produced{Reply: reply}
	}
	return middleware.Produced{}
}

// replay reads what the first attempt produced: its Message reply, or its task as it
// is now, with the retry's historyLength applied.
//
// The error is the status to answer: a refusal, or the service's own answer to the
// task read (PERMISSION_DENIED from its authorization, say), relayed as it is, as the
// HTTP bindings relay the wrapped handler's.
func (x *call) replay(step *middleware.Step) (*a2apb.Message, *a2apb.Task, error) {
	var task *a2apb.Task
	var relayed *serviceError
	reply, r := x.i.sends.ReadTask(x.ctx, &x.send, step, func(ctx context.Context, taskID string) error {
		t, err := x.readTask(ctx, taskID)
		task = t
		if se, ok := err.(*serviceError); ok {
			relayed = se
		}
		return err
	}, x.executionRunning)
	switch {
	case relayed != nil && r != nil:
		return nil, nil, relayed.status
	case r != nil:
		return nil, nil, x.refuse(r)
	case reply != nil:
		msg, err := fromJSON[a2apb.Message](reply)
		if err != nil {
			return nil, nil, x.refuse(x.i.sends.Unanswerable(&x.send, err))
		}
		return msg, nil, nil
	}
	return nil, shapeHistory(task, x.history), nil
}

// serviceError is the service's answer to a task read other than NOT_FOUND.
type serviceError struct{ status error }

func (e *serviceError) Error() string { return "GetTask: " + status.Convert(e.status).Message() }

// readTask reads task taskID through Options.Tasks, or through the service's GetTask
// with the retry's own context. A task the service does not have returns an error
// wrapping middleware.ErrTaskNotFound.
func (x *call) readTask(ctx context.Context, taskID string) (*a2apb.Task, error) {
	if x.i.tasks != nil {
		raw, err := x.i.tasks.ReadTask(ctx, x.request(), x.in.GetTenant(), taskID)
		if err != nil {
			return nil, err
		}
		return fromJSON[a2apb.Task](raw)
	}
	task, err := x.svc.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: x.in.GetTenant(), Id: taskID})
	if status.Code(err) == codes.NotFound {
		return nil, fmt.Errorf("%w: %s", middleware.ErrTaskNotFound, status.Convert(err).Message())
	}
	if err != nil {
		return nil, &serviceError{status: err}
	}
	return task, nil
}

// request returns the request that stands for the call in a TaskSource's ReadTask.
func (x *call) request() *http.Request {
	md, _ := metadata.FromIncomingContext(x.ctx)
	header := make(http.Header, len(md))
	for k, v := range md {
		header[http.CanonicalHeaderKey(k)] = v
	}
	r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: x.method}, Header: header, Proto: "HTTP/2.0", ProtoMajor: 2}
	return r.WithContext(x.ctx)
}

// shapeHistory applies historyLength n to task as the HTTP bindings do: absent or
// negative keeps the history, 0 drops it, n keeps its last n messages.
func shapeHistory(task *a2apb.Task, n *int32) *a2apb.Task {
	if n == nil || *n < 0 || len(task.GetHistory()) <= int(*n) {
		return task
	}
	task.History = task.History[len(task.History)-int(*n):]
	if len(task.History) == 0 {
		task.History = nil
	}
	return task
}
