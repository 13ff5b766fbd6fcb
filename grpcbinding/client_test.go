package grpcbinding

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a2akit/idempotency/adapter/keyedclient"
)
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
		func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { called++; return unavailable })
	if err != unavailable || called != 1 {
		t.Fatalf("outside a keyed send: %v, want the status unchanged", err)
	}
}
