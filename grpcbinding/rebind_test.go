package grpcbinding

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// A gRPC send whose answer named its task while the index could not bind the key
// keeps its claim: the engine binds it again in the background, extending the lease
// meanwhile, so a retry after the lease's time gets the task and the agent runs
// once (middleware's TestBindFailureKeepsTheClaimUntilBound, over gRPC). Unary and
// streaming; with the adapter, and on a server the kit cannot see inside.
func TestBindFailureKeepsTheClaimUntilBound(t *testing.T) {
	const lease = 300 * time.Millisecond
	for _, streaming := range []bool{false, true} {
		for _, noAdapter := range []bool{false, true} {
			name := map[bool]string{false: "unary", true: "streaming"}[streaming] +
				map[bool]string{false: "/adapter", true: "/no-adapter"}[noAdapter]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ix := testkit.NewFaultyIndex(newIndex())
				s := startServer(t, serverConfig{index: ix, keyed: true, noAdapter: noAdapter,
					opts: Options{Lease: lease, ReplayWait: 100 * time.Millisecond}})
				ix.FailNext(testkit.OpBind, 3) // the bind at the answer, and two more
				c := s.client(t, a2a.TransportProtocolGRPC)
				req := keyedRequest(t, idempotency.NewKey())
				send := func() a2a.TaskID {
					if !streaming {
						res, err := c.SendMessage(context.Background(), req)
						if err != nil {
							t.Fatalf("send: %v", err)
						}
						return res.TaskInfo().TaskID
					}
					for ev, err := range c.SendStreamingMessage(context.Background(), req) {
						if err != nil {
							t.Fatalf("stream: %v", err)
						}
						return ev.TaskInfo().TaskID
					}
					t.Fatal("empty stream")
					return ""
				}
				first := send()
				time.Sleep(3 * lease) // the lease would have ended twice over
				if again := send(); again != first {
					t.Errorf("retry after %v: task %s, want %s", 3*lease, again, first)
				}
				if n := s.agent.Runs(); n != 1 {
					t.Errorf("the agent ran %d times for one key; want 1", n)
				}
			})
		}
	}
}
