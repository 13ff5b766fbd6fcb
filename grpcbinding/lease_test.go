package grpcbinding

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"

	"github.com/a2akit/idempotency"
)

// Issue 23, bug 3: a blocking gRPC send that outlives its lease keeps its claim. The
// engine extends the lease while the send runs, so a retry (over gRPC, or over HTTP
// through another middleware on the same index, as another process would) waits and
// is told the send is in flight; it never takes the claim over and runs the agent a
// second time. The server is one the kit cannot see inside (no adapter): the key
// binds only when the blocking answer comes.
func TestLongSendOutlivesItsLease(t *testing.T) {
	const lease = 300 * time.Millisecond
	hold := make(chan struct{})
	agent := holdFirst(hold)
	s := startServer(t, serverConfig{agent: agent, keyed: true, noAdapter: true,
		opts: Options{Lease: lease, ReplayWait: 50 * time.Millisecond}})
	key := idempotency.NewKey()
	req := keyedRequest(t, key)
	first := make(chan error, 1)
	go func() {
		_, err := s.client(t, a2a.TransportProtocolGRPC).SendMessage(context.Background(), req)
		first <- err
	}()
	time.Sleep(3 * lease) // the claim's first lease ended long ago
	// (A retry that took the claim over would hold in the agent: bound its wait.)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := s.raw(t).SendMessage(ctx, rawRequest(t, req))
	wantStatus(t, err, codes.Unavailable, "SERVER_ERROR", "still in flight")
	_, err = s.client(t, a2a.TransportProtocolJSONRPC).SendMessage(ctx, req)
	if err == nil || !errors.Is(err, a2a.ErrServerError) && !strings.Contains(err.Error(), "409") {
		t.Errorf("HTTP retry while the gRPC send runs: %v; want 409 in flight", err)
	}
	if n := agent.Runs(); n != 1 {
		t.Fatalf("the agent ran %d times while the first send ran; want once", n)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("first send: %v", err)
	}
	if n := agent.Runs(); n != 1 {
		t.Errorf("the agent ran %d times; want once", n)
	}
}
