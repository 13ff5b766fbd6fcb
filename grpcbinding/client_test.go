package grpcbinding

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/internal/testkit"
)

// loseFirst returns server options, to put before the kit's interceptors, that lose
// the answer of the first send of each kind after the server has handled it (unary),
// or cut the first stream after its first event, as a dropped connection would. The
// counter counts the sends that reached the server.
func loseFirst(sends *atomic.Int64) []grpc.ServerOption {
	errLost := status.Error(codes.Unavailable, "connection lost")
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod != a2apb.A2AService_SendMessage_FullMethodName {
			return handler(ctx, req)
		}
		res, err := handler(ctx, req)
		if sends.Add(1) == 1 {
			return nil, errLost
		}
		return res, err
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.FullMethod != a2apb.A2AService_SendStreamingMessage_FullMethodName || sends.Add(1) != 1 {
			return handler(srv, ss)
		}
		err := handler(srv, &cutStream{ServerStream: ss})
		if errors.Is(err, errCut) {
			return errLost
		}
		return err
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

var errCut = errors.New("cut")

// cutStream passes one event on and fails every later send.
type cutStream struct {
	grpc.ServerStream
	sent int
}

func (s *cutStream) SendMsg(m any) error {
	if s.sent++; s.sent > 1 {
		return errCut
	}
	return s.ServerStream.SendMsg(m)
}

// keyedClient returns an a2a-go client of s over gRPC through WithKeyedTransport,
// which retries quickly (with opts, when given), with dialOpts added.
func keyedClient(t *testing.T, s *server, opts *keyedclient.Options, dialOpts ...grpc.DialOption) *a2aclient.Client {
	t.Helper()
	kopts := keyedclient.Options{PeerHonoursKeys: true, Retry: keyedclient.RetryPolicy{InitialDelay: 10 * time.Millisecond}}
	if opts != nil {
		kopts = *opts
	}
	dialOpts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)
	return s.client(t, a2a.TransportProtocolGRPC, WithKeyedTransport(kopts, dialOpts...))
}

// unkeyedRequest returns a send of a fresh message without a key.
func unkeyedRequest() *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))}
}

func TestKeyedClientRetriesLostAnswer(t *testing.T) {
	var sends atomic.Int64
	s := startServer(t, serverConfig{keyed: true, grpcOptions: loseFirst(&sends)})
	c := keyedClient(t, s, nil)
	req := unkeyedRequest() // the keyed transport attaches a key
	task := taskOf(t)(c.SendMessage(context.Background(), req))
	if sends.Load() != 2 {
		t.Fatalf("%d attempts reached the server, want 2", sends.Load())
	}
	if len(task.History) == 0 {
		t.Fatal("the answer has no history")
	}
	if _, ok, _ := idempotency.KeyOf(task.History[0].Metadata); !ok {
		t.Fatal("the message the server got carried no key")
	}
	wantRuns(t, s, 1)
}

func TestKeyedClientRetriesCutStream(t *testing.T) {
	var sends atomic.Int64
	s := startServer(t, serverConfig{keyed: true, grpcOptions: loseFirst(&sends)})
	c := keyedClient(t, s, nil)
	req := unkeyedRequest()
	var last a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if sends.Load() != 2 {
		t.Fatalf("%d attempts reached the server, want 2", sends.Load())
	}
	if u, ok := last.(*a2a.TaskStatusUpdateEvent); !ok || u.Status.State != a2a.TaskStateCompleted {
		if task, ok := last.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("last event %#v, want the task completed", last)
		}
	}
	wantRuns(t, s, 1)
}

func TestKeyedClientRefusalNotRetried(t *testing.T) {
	var sends atomic.Int64
	s := startServer(t, serverConfig{keyed: true})
	counting := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		sends.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	c := keyedClient(t, s, nil, counting)
	key := idempotency.NewKey()
	taskOf(t)(c.SendMessage(context.Background(), keyedRequest(t, key)))
	_, err := c.SendMessage(context.Background(), keyedRequest(t, key))
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "already held") {
		t.Fatalf("got %v, want the refusal as a2a-go reports it", err)
	}
	if sends.Load() != 2 {
		t.Fatalf("%d sends, want 2: a refusal is not retried", sends.Load())
	}
}

func TestKeyedClientUnavailableRetried(t *testing.T) {
	index := testkit.NewFaultyIndex(newIndex())
	index.SetFail(testkit.OpClaim, true)
	s := startServer(t, serverConfig{keyed: true, index: index})
	var sends atomic.Int64
	counting := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if sends.Add(1) == 2 {
			index.SetFail(testkit.OpClaim, false) // the index is back for the second attempt
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	// MaxDelay caps the server's Retry-After.
	opts := keyedclient.Options{PeerHonoursKeys: true, Retry: keyedclient.RetryPolicy{InitialDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}}
	c := keyedClient(t, s, &opts, counting)
	taskOf(t)(c.SendMessage(context.Background(), keyedRequest(t, idempotency.NewKey())))
	if sends.Load() != 2 {
		t.Fatalf("%d sends, want 2", sends.Load())
	}
	wantRuns(t, s, 1)
}

func TestRetryableOnlyForRetriedSends(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	if err := retryable(unavailable, nil, nil); !errors.As(err, new(*keyedclient.RetryableError)) {
		t.Fatalf("UNAVAILABLE: %v, want a RetryableError", err)
	}
	// It must not wrap the status: a2a-go would convert it into an *a2a.Error.
	if _, ok := status.FromError(retryable(unavailable, nil, nil)); ok {
		t.Fatal("the RetryableError carries the gRPC status")
	}
	for _, code := range []codes.Code{codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.ResourceExhausted, codes.Internal} {
		err := status.Error(code, "x")
		if got := retryable(err, nil, nil); got != err {
			t.Errorf("%v: %v, want it unchanged", code, got)
		}
	}
	// The interceptor acts only on the attempts keyedclient may retry.
	called := 0
	err := UnaryClientInterceptor()(context.Background(), "/m", nil, nil, nil,
		func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			called++
			return unavailable
		})
	if err != unavailable || called != 1 {
		t.Fatalf("outside a keyed send: %v, want the status unchanged", err)
	}
}

// A2A v1.1 answers a generation mismatch with ABORTED and an ErrorInfo: a typed
// error that no retry mends. a2a-go's own ABORTED for a stream it could not write to
// carries none, and stays retryable (TestKeyedClientRetriesCutStream).
func TestKeyedClientGenerationMismatchNotRetried(t *testing.T) {
	var sends atomic.Int64
	mismatch := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod != a2apb.A2AService_SendMessage_FullMethodName {
			return handler(ctx, req)
		}
		sends.Add(1)
		st, err := status.New(codes.Aborted, "task generation mismatch").WithDetails(
			&errdetails.ErrorInfo{Reason: "TASK_GENERATION_MISMATCH", Domain: "a2a-protocol.org"})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	s := startServer(t, serverConfig{keyed: true, grpcOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(mismatch)}})
	c := keyedClient(t, s, nil)
	_, err := c.SendMessage(context.Background(), keyedRequest(t, idempotency.NewKey()))
	if err == nil {
		t.Fatal("the send succeeded, want the mismatch")
	}
	if sends.Load() != 1 {
		t.Fatalf("%d sends, want 1: ABORTED with an ErrorInfo is never retried", sends.Load())
	}
	if got := retryable(status.Error(codes.Aborted, "failed to send response: cut"), nil, nil); !errors.As(got, new(*keyedclient.RetryableError)) {
		t.Fatalf("a bare ABORTED: %v, want a RetryableError", got)
	}
}

// keyedclient.WatchReplay tells a gRPC client whether an answer was served from a
// first attempt, by the header metadata idempotent-replayed.
func TestWatchReplayGRPC(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := keyedClient(t, s, nil)
	req := keyedRequest(t, idempotency.NewKey())
	for i, streaming := range []bool{false, false, true} {
		ctx, replay := keyedclient.WatchReplay(context.Background())
		if streaming {
			for _, err := range c.SendStreamingMessage(ctx, req) {
				if err != nil {
					t.Fatal(err)
				}
			}
		} else {
			taskOf(t)(c.SendMessage(ctx, req))
		}
		if !replay.Answered() || replay.Replayed() != (i > 0) {
			t.Fatalf("send %d (streaming %v): answered %v, replayed %v; want replayed %v", i, streaming, replay.Answered(), replay.Replayed(), i > 0)
		}
	}
	wantRuns(t, s, 1)
}
