package grpcbinding

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// TestAdapterBindsBeforeAgentRuns checks that the adapter works unchanged behind
// a2a-go's gRPC handler: the claim the interceptors put in the call's context reaches
// the executor, which binds the key to the task before the agent's first step, over
// SendMessage and SendStreamingMessage.
func TestAdapterBindsBeforeAgentRuns(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		key := idempotency.NewKey()
		var srv *server
		boundAtStart := make(chan string, 1)
		agent := &testkit.Agent{OnRun: func(ctx context.Context, ec *a2asrv.ExecutorContext) {
			taskID := ec.TaskID
			rec, _, _ := srv.index.Lookup(ctx, "", key)
			if rec.TaskID != string(taskID) {
				boundAtStart <- "bound to " + rec.TaskID + ", not " + string(taskID)
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
		wantRuns(t, srv, 1)
	}
}
