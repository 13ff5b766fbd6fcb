package grpcbinding

import (
	"context"
	"io"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/middleware"
)

// markerOptions returns the dial options that report the answers of sends to r.
func markerOptions(r *wireclient.MarkerRule) []grpc.DialOption {
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var header metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&header))...)
		if in, ok := req.(*a2apb.SendMessageRequest); ok {
			kind, served := wireclient.Task, ""
			if out, ok := reply.(*a2apb.SendMessageResponse); ok {
				served = out.GetTask().GetId()
				if out.GetMessage() != nil {
					kind, served = wireclient.Message, out.GetMessage().GetMessageId()
				}
			}
			observeCall(r, ctx, in, header, kind, served, err)
		}
		return err
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != a2apb.A2AService_SendStreamingMessage_FullMethodName {
			return cs, err
		}
		return &markedStream{ClientStream: cs, r: r, ctx: ctx}, nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

// markedStream reports the answer of a streamed send when it ends.
type markedStream struct {
	grpc.ClientStream
	r      *wireclient.MarkerRule
	ctx    context.Context
	in     *a2apb.SendMessageRequest
	kind   wireclient.Kind
	served string // the task or Message of the first event
	events int
	done   bool
}

func (s *markedStream) SendMsg(m any) error {
	if in, ok := m.(*a2apb.SendMessageRequest); ok {
		s.in = in
	}
	return s.ClientStream.SendMsg(m)
}

func (s *markedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		if s.events == 0 {
			s.kind = wireclient.Task
			if ev, ok := m.(*a2apb.StreamResponse); ok {
				s.served = ev.GetTask().GetId() + ev.GetStatusUpdate().GetTaskId() + ev.GetArtifactUpdate().GetTaskId()
				if ev.GetMessage() != nil {
					s.kind, s.served = wireclient.Message, ev.GetMessage().GetMessageId()
				}
			}
		}
		s.events++
		return nil
	}
	if !s.done && s.in != nil {
		s.done = true
		header, _ := s.Header()
		if err == io.EOF || s.events > 0 {
			observeCall(s.r, s.ctx, s.in, header, s.kind, s.served, nil)
		} else {
			observeCall(s.r, s.ctx, s.in, header, s.kind, s.served, err)
		}
	}
	return err
}

// observeCall reports one send's answer to r: kind and the task or Message served
// when it served something, or else the error.
func observeCall(r *wireclient.MarkerRule, ctx context.Context, in *a2apb.SendMessageRequest, header metadata.MD, kind wireclient.Kind, served string, err error) {
	key, _, _ := keyOf(in.GetMessage())
	if key == "" {
		md, _ := metadata.FromOutgoingContext(ctx)
		key, _, _ = idempotency.KeyOfSend("", nil, md.Get(keyMetadata))
	}
	v := header.Get(replayedMetadata)
	replayed := len(v) == 1 && v[0] == "true"
	kitReason := ""
	if err != nil {
		st := status.Convert(err)
		kind = wireclient.Refused
		if st.Code() == codes.NotFound {
			kind = wireclient.TaskNotFound
		}
		for _, d := range st.Details() {
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == middleware.ReasonDomain {
				kitReason = info.GetReason()
			}
		}
	}
	r.Observe(key, kind, served, kitReason, replayed, "gRPC "+kind.String()+" "+status.Convert(err).Message())
}
