package grpcbinding

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency/adapter/keyedclient"
)

// WithKeyedTransport returns an a2aclient factory option for the gRPC binding that
// does for it what [keyedclient.FactoryOptions] does for JSON-RPC and HTTP+JSON: each
// client it builds sends through a [keyedclient.Transport] over a2a-go's gRPC
// transport, whose connection has [UnaryClientInterceptor] and
// [StreamClientInterceptor] first in its chains, so that the Transport sees which
// failures are ambiguous. dialOpts are passed to grpc.NewClient (transport credentials
// are required there, as with a2agrpc.WithGRPCTransport). Use it in place of
// a2agrpc.WithGRPCTransport, next to keyedclient.FactoryOptions:
//
//	opts := append(keyedclient.FactoryOptions(kopts), grpcbinding.WithKeyedTransport(kopts, creds))
//	client, err := a2aclient.NewFromCard(ctx, card, opts...)
func WithKeyedTransport(opts keyedclient.Options, dialOpts ...grpc.DialOption) a2aclient.FactoryOption {
	dialOpts = append([]grpc.DialOption{
		grpc.WithChainUnaryInterceptor(UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(StreamClientInterceptor()),
	}, dialOpts...)
	return a2aclient.WithTransport(a2a.TransportProtocolGRPC,
		a2aclient.TransportFactoryFn(func(ctx context.Context, card *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
			conn, err := grpc.NewClient(iface.URL, dialOpts...)
			if err != nil {
				return nil, err
			}
			return keyedclient.NewTransport(a2agrpc.NewGRPCTransport(conn), card, opts), nil
		}))
}

// UnaryClientInterceptor returns the client interceptor that lets a
// [keyedclient.Transport] retry keyed gRPC sends. On the attempts that
// [keyedclient.Retrying] reports, and only there, it turns an ambiguous status into a
// [keyedclient.RetryableError], with the delay the server asked for: UNAVAILABLE (the
// connection failed or dropped, the server's index is unavailable, or the first
// attempt is still in flight), ABORTED without an ErrorInfo (a2a-go's server answers
// a stream it could not write to so), and RESOURCE_EXHAUSTED with a delay. An ABORTED
// that carries an ErrorInfo is a typed error, A2A v1.1's TaskGenerationMismatch
// among them, which no retry mends: it is never retried. a2a-go's gRPC transport
// would otherwise turn every status into an *a2a.Error, which the Transport rightly
// never retries. Every other call, and every other status, passes through unchanged.
// On every call it also tells a [keyedclient.Replay] watching the call's context
// (keyedclient.WatchReplay) whether the answer's header metadata marked it as served
// from a first attempt.
//
// The delay is read from a google.rpc.RetryInfo detail, or else from a retry-after
// header or trailer in seconds, as the kit's server interceptors send both.
func UnaryClientInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var header, trailer metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&header), grpc.Trailer(&trailer))...)
		noteReplayed(ctx, header)
		if !keyedclient.Retrying(ctx) {
			return err
		}
		return retryable(err, header, trailer)
	}
}

// StreamClientInterceptor is [UnaryClientInterceptor] for streams: the statuses that
// open or end the stream of a retried keyed send, including a connection that drops
// after some events, are turned into a [keyedclient.RetryableError] by the same rules.
func StreamClientInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		retrying := keyedclient.Retrying(ctx)
		cs, err := streamer(ctx, desc, cc, method, opts...)
		switch {
		case err != nil && retrying:
			return nil, retryable(err, nil, nil)
		case err != nil:
			return nil, err
		}
		return &retryableStream{ClientStream: cs, ctx: ctx, retrying: retrying}, nil
	}
}

type retryableStream struct {
	grpc.ClientStream
	ctx      context.Context
	retrying bool
	noted    bool
}

func (s *retryableStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if !s.noted {
		s.noted = true
		header, _ := s.Header()
		noteReplayed(s.ctx, header)
	}
	if err == nil || !s.retrying {
		return err
	}
	header, _ := s.Header()
	return retryable(err, header, s.Trailer())
}

// noteReplayed tells a keyedclient.Replay watching ctx whether header, an answer's
// header metadata, marks it as served from a first attempt.
func noteReplayed(ctx context.Context, header metadata.MD) {
	v := header.Get(replayedMetadata)
	keyedclient.NoteReplayed(ctx, len(v) == 1 && v[0] == "true")
}

// retryable returns err as a keyedclient.RetryableError when its status is ambiguous,
// and err otherwise. The RetryableError does not wrap the status: a2a-go's transport
// would find it and convert the error into an *a2a.Error.
func retryable(err error, header, trailer metadata.MD) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	retryAfter := retryDelay(st, header, trailer)
	switch st.Code() {
	case codes.Unavailable:
	case codes.Aborted:
		if hasErrorInfo(st) {
			return err
		}
	case codes.ResourceExhausted:
		if retryAfter == 0 {
			return err // a message over the size limit, most likely: retrying cannot help
		}
	default:
		return err
	}
	return &keyedclient.RetryableError{
		Err:        errors.New("gRPC status " + st.Code().String() + ": " + st.Message()),
		RetryAfter: retryAfter,
	}
}

// hasErrorInfo reports whether st carries a google.rpc.ErrorInfo: it is a typed
// error, not a broken call.
func hasErrorInfo(st *status.Status) bool {
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.ErrorInfo); ok {
			return true
		}
	}
	return false
}

// retryDelay reads the delay a status asks for: its google.rpc.RetryInfo, or a
// retry-after value in seconds in the trailer or header; zero when there is none.
func retryDelay(st *status.Status, header, trailer metadata.MD) time.Duration {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().IsValid() {
			return max(ri.GetRetryDelay().AsDuration(), 0)
		}
	}
	for _, md := range []metadata.MD{trailer, header} {
		if v := md.Get(retryAfterMetadata); len(v) > 0 {
			if secs, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil && secs > 0 {
				return time.Duration(min(secs, 86400)) * time.Second
			}
		}
	}
	return 0
}

// retryAfterMetadata is the metadata name of the delay, the HTTP header's name in
// gRPC's lower case.
const retryAfterMetadata = "retry-after"
