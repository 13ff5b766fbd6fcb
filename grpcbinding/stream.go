package grpcbinding

import (
	"context"
	"errors"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency/middleware"
)

// keyedStream is the stream of a SendStreamingMessage. The service's read of the
// request decides: an unkeyed send goes on untouched (the request is read once, into
// the service's own message); a keyed one is refused there (the read fails with the
// refusal's status), replayed there (the read fails with errAnswered, which finish
// turns back into the replay's own end), or forwarded, with the claim in Context and
// its first event held back by SendMsg until the key is bound to it.
type keyedStream struct {
	grpc.ServerStream
	i      *Interceptors
	svc    a2apb.A2AServiceServer
	method string

	read     bool
	x        *call            // a keyed send
	step     *middleware.Step // a forwarded keyed send
	settled  bool             // the forwarded send was settled
	answered error            // the end of a replay
}

// errAnswered ends the service's run of a send the interceptor answered itself.
var errAnswered = errors.New("grpcbinding: answered by the interceptor")

func (s *keyedStream) RecvMsg(m any) error {
	if s.read {
		return s.ServerStream.RecvMsg(m)
	}
	s.read = true
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	in, ok := m.(*a2apb.SendMessageRequest)
	if !ok {
		return nil
	}
	x, keyed := s.i.newCall(s.ServerStream.Context(), in, s.method, s.svc, true)
	if !keyed {
		return nil
	}
	x.ss = s.ServerStream
	s.x = x
	step := x.begin()
	switch {
	case step.Refusal != nil:
		return x.refuse(step.Refusal)
	case step.Gone:
		return status.FromContextError(x.ctx.Err()).Err()
	case step.Forward != nil:
		x.header()
		s.step = step
		return nil
	}
	s.answered = x.replayStream(step)
	return errAnswered
}

// Context returns the call's context, with the claim of a forwarded send.
func (s *keyedStream) Context() context.Context {
	if s.step != nil {
		return s.step.Forward
	}
	return s.ServerStream.Context()
}

// SendMsg settles a forwarded send on its first event, before the event goes out.
func (s *keyedStream) SendMsg(m any) error {
	if s.step != nil && !s.settled {
		s.settled = true
		p := middleware.Produced{}
		if ev, ok := m.(*a2apb.StreamResponse); ok {
			p = s.x.produced(ev.GetTask(), ev.GetStatusUpdate(), ev.GetArtifactUpdate(), ev.GetMessage())
		}
		if r := s.i.sends.Settle(s.x.ctx, &s.x.send, s.step, p); r != nil {
			return s.x.refuse(r)
		}
	}
	return s.ServerStream.SendMsg(m)
}

// finish returns the status the call ends with, given the service's err: a replay's
// own end, or err, after settling a forwarded send that produced no event.
func (s *keyedStream) finish(err error) error {
	if errors.Is(err, errAnswered) {
		return s.answered
	}
	if s.step != nil && !s.settled {
		s.settled = true
		if r := s.i.sends.Settle(s.x.ctx, &s.x.send, s.step, failed(err)); r != nil {
			s.step.Done()
			return s.x.refuse(r)
		}
	}
	s.step.Done()
	return err
}
