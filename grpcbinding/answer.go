package grpcbinding

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// The gRPC binding's answers: what a forward's end showed (gRPC's column of the rule
// of ambiguity), the statuses of refusals, the response metadata, and the streams
// a replay and a probe send to.

// failed returns what a forward that ended with err (and produced nothing) showed,
// by gRPC's column of the rule of ambiguity (see the middleware package): a status
// of the service's own that says the call was refused or failed before its task
// existed (every code but those below) releases the key; CANCELED,
// DEADLINE_EXCEEDED, UNAVAILABLE, ABORTED, UNKNOWN and DATA_LOSS (the call was cut,
// or what ran is unknown), and no error at all, leave it pending.
func failed(err error) middleware.Produced {
	switch status.Code(err) {
	case codes.OK, codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Aborted, codes.Unknown, codes.DataLoss:
		return middleware.Produced{}
	}
	return middleware.Produced{Refused: true}
}

// extensionsMetadata is the response metadata name of the active extensions, the
// A2A-Extensions header in gRPC's lower case, as a2agrpc sends it.
const extensionsMetadata = "a2a-extensions"

// replayedMetadata is idempotency.ReplayedHeader as response header metadata.
var replayedMetadata = strings.ToLower(idempotency.ReplayedHeader)

// header names the extension in the response header.
func (x *call) header() { x.setHeader(metadata.Pairs(extensionsMetadata, idempotency.ExtensionURI)) }

// setHeader sets the call's response header metadata, once.
func (x *call) setHeader(md metadata.MD) {
	if x.headerSet {
		return
	}
	x.headerSet = true
	if x.ss != nil {
		_ = x.ss.SetHeader(md)
		return
	}
	_ = grpc.SetHeader(x.ctx, md)
}

// servedFromFirstAttempt sets the header metadata of every answer served from a
// first attempt (a replay, an attach to its live events, its Message reply again,
// the news that its task is gone or that its reply cannot be replayed): the one
// place for them. A first send's own answers, and refusals, name the extension only.
func (x *call) servedFromFirstAttempt() {
	x.setHeader(metadata.Pairs(extensionsMetadata, idempotency.ExtensionURI, replayedMetadata, "true"))
}

func (x *call) setTrailer(md metadata.MD) {
	if x.ss != nil {
		x.ss.SetTrailer(md)
		return
	}
	_ = grpc.SetTrailer(x.ctx, md)
}

// refuse returns the status of r, and sets the response metadata that goes with it.
func (x *call) refuse(r *middleware.Refusal) error {
	switch {
	case r.FromFirstAttempt():
		x.servedFromFirstAttempt()
	case r.Extension:
		x.header()
	}
	code, reason := codeOf(r.Kind)
	// The kit's ErrorInfo first: a2a-go's gRPC client types a status by its last
	// ErrorInfo, whatever the domain, so A2A's comes last.
	kit := &errdetails.ErrorInfo{Reason: r.Reason, Domain: middleware.ReasonDomain}
	info := &errdetails.ErrorInfo{Reason: reason, Domain: errorDomain}
	details := []protoadapt.MessageV1{kit, info}
	if r.RetryAfter > 0 {
		secs := retryAfterSeconds(r.RetryAfter)
		info.Metadata = map[string]string{"retryAfterSeconds": strconv.Itoa(secs)}
		kit.Metadata = info.Metadata
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)})
		x.setTrailer(metadata.Pairs(retryAfterMetadata, strconv.Itoa(secs)))
	}
	st, err := status.New(code, r.Message).WithDetails(details...)
	if err != nil {
		return status.New(code, r.Message).Err()
	}
	return st.Err()
}

// errorDomain is the ErrorInfo domain of A2A errors.
const errorDomain = "a2a-protocol.org"

// codeOf returns the gRPC code and ErrorInfo reason of a refusal, those of A2A's gRPC
// binding for the error the other bindings answer.
func codeOf(k middleware.RefusalKind) (codes.Code, string) {
	switch k {
	case middleware.RefusedInvalid:
		return codes.InvalidArgument, "INVALID_PARAMS"
	case middleware.RefusedUnsupported:
		return codes.FailedPrecondition, "UNSUPPORTED_OPERATION"
	case middleware.RefusedTaskNotFound:
		return codes.NotFound, "TASK_NOT_FOUND"
	case middleware.RefusedUnavailable:
		return codes.Unavailable, "SERVER_ERROR"
	case middleware.RefusedInFlight:
		// Never ABORTED: A2A v1.1 answers a generation mismatch with it.
		return codes.Unavailable, "SERVER_ERROR"
	case middleware.RefusedExhausted:
		return codes.ResourceExhausted, "RESOURCE_EXHAUSTED"
	case middleware.RefusedUnreplayable:
		return codes.DataLoss, "REPLY_NOT_REPLAYABLE"
	}
	return codes.Internal, "INTERNAL_ERROR"
}

// retryAfterSeconds rounds d up to whole seconds, at least 1, as Retry-After is sent.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// subscribeStream is the stream a replay's SubscribeToTask sends to: its first event,
// the task, is shaped by the retry's historyLength, and every event is passed on.
type subscribeStream struct {
	grpc.ServerStream
	x    *call
	sent bool
}

var _ grpc.ServerStreamingServer[a2apb.StreamResponse] = (*subscribeStream)(nil)

func (s *subscribeStream) Send(ev *a2apb.StreamResponse) error {
	if !s.sent {
		s.x.servedFromFirstAttempt()
		if task := ev.GetTask(); task != nil {
			ev = &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: shapeHistory(task, s.x.history)}}
		}
	}
	s.sent = true
	return s.ServerStream.SendMsg(ev)
}

// SetHeader and SendHeader keep the subscription's own metadata out of the answer,
// which has its headers already.
func (s *subscribeStream) SetHeader(metadata.MD) error  { return nil }
func (s *subscribeStream) SendHeader(metadata.MD) error { return nil }

// probeWait is how long a subscription must stay open, neither failing nor ending,
// for the execution it follows to count as running, as in the HTTP middleware: a
// service answers a subscription to an execution it does not run at once (a2a-go:
// NOT_FOUND), so the wait only costs when the execution is running.
const probeWait = 500 * time.Millisecond

// executionRunning reports whether the service still runs an execution of taskID: a
// SubscribeToTask with the retry's own context opens and, within probeWait, carries
// an event or stays open without failing. The core asks it when a key's task is not
// found, to tell a task whose agent is still before its first event (a2a-go stores
// the task at that event) from one that is gone.
func (x *call) executionRunning(ctx context.Context, taskID string) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ps := &probeStream{ctx: ctx, event: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = x.svc.SubscribeToTask(&a2apb.SubscribeToTaskRequest{Tenant: x.in.GetTenant(), Id: taskID}, ps)
	}()
	timer := time.NewTimer(probeWait)
	defer timer.Stop()
	select {
	case <-ps.event:
		cancel()
		<-done
		return true
	case <-done:
		// Ended before probeWait: running only if it carried an event first.
		return ps.sawEvent()
	case <-timer.C:
		cancel()
		<-done
		return true
	}
}

// probeStream is the stream of executionRunning's subscription: it keeps nothing but
// whether an event came.
type probeStream struct {
	ctx   context.Context
	event chan struct{} // closed at the first event
	once  sync.Once
}

var _ grpc.ServerStreamingServer[a2apb.StreamResponse] = (*probeStream)(nil)

func (p *probeStream) Send(*a2apb.StreamResponse) error {
	p.once.Do(func() { close(p.event) })
	return nil
}

func (p *probeStream) sawEvent() bool {
	select {
	case <-p.event:
		return true
	default:
		return false
	}
}

func (p *probeStream) Context() context.Context     { return p.ctx }
func (p *probeStream) SetHeader(metadata.MD) error  { return nil }
func (p *probeStream) SendHeader(metadata.MD) error { return nil }
func (p *probeStream) SetTrailer(metadata.MD)       {}
func (p *probeStream) SendMsg(m any) error {
	if ev, ok := m.(*a2apb.StreamResponse); ok {
		return p.Send(ev)
	}
	return nil
}
func (p *probeStream) RecvMsg(any) error { return nil }
