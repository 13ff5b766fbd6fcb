package grpcbinding

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// TestAdapterBindsWhenTaskStored checks that the adapter works unchanged behind
// a2a-go's gRPC handler: the claim the interceptors put in the call's context reaches
// the executor and the task store, which binds the key to the task once it is stored
// (not before the agent's first event), over SendMessage and SendStreamingMessage.
func TestAdapterBindsWhenTaskStored(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		key := idempotency.NewKey()
		var srv *server
		boundAtStart := make(chan string, 1)
		agent := &testkit.Agent{OnRun: func(ctx context.Context, ec *a2asrv.ExecutorContext) {
			if rec, _, _ := srv.index.Lookup(ctx, "", key); !rec.Pending() {
				boundAtStart <- "bound to " + rec.TaskID + " before the task was stored"
				return
			}
			boundAtStart <- ""
		}}
		srv = startServer(t, serverConfig{keyed: true, agent: agent})
		c := srv.client(t, a2a.TransportProtocolGRPC)
		if streaming {
			for _, err := range c.SendStreamingMessage(context.Background(), keyedRequest(t, key)) {
				if err != nil {
					t.Fatal(err)
				}
			}
		} else {
			taskOf(t)(c.SendMessage(context.Background(), keyedRequest(t, key)))
		}
		if why := <-boundAtStart; why != "" {
			t.Fatalf("streaming %v: when the agent started, the key was %s", streaming, why)
		}
		if rec, _, err := srv.index.Lookup(context.Background(), "", key); err != nil || rec.TaskID == "" {
			t.Fatalf("streaming %v: after the send the key is %+v (err %v), want bound to its task", streaming, rec, err)
		}
		wantRuns(t, srv, 1)
	}
}
