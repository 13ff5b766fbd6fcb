package middleware_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
)

// A v1.0 HTTP+JSON server whose send paths also end in /v1/message:send, v0.3's
// paths (mounted under /api/v1, or reached through a tenant named v1), keeps its
// v1.0 reading: its messages have parts, not v0.3's content. So historyLength 0
// drops the history (v0.3 would read it as absent), the tenant is the scope, and a
// Message reply is replayed in v1.0's shape.
func TestV1RESTUnderV1Prefix(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{Mount: func(mux *http.ServeMux, rh a2asrv.RequestHandler) {
		mux.Handle("/api/v1/", http.StripPrefix("/api/v1", a2asrv.NewRESTHandler(rh)))
	}})
	underV1, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(h.Server.URL+"/api/v1", a2a.TransportProtocolHTTPJSON)}, a2aclient.WithRESTTransport(h.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		c      *a2aclient.Client
		path   string
		tenant string
	}{
		{"mounted under /api/v1", underV1, "/api/v1/message:send", ""},
		{"tenant v1", h.Client(mwtest.REST10, "v1", ""), "/t/v1/message:send", "v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo under v1")
			first, err := tc.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
			if err != nil {
				t.Fatal(err)
			}
			if x := h.Wire.Last(); x.Path != tc.path {
				t.Fatalf("sent to %s, want %s", x.Path, tc.path)
			}
			retry, err := tc.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{HistoryLength: ptr(0)}})
			if err != nil {
				t.Fatal(err)
			}
			task := retry.(*a2a.Task)
			if task.ID != first.(*a2a.Task).ID || len(task.History) != 0 || h.Agent.RunsOf(msg.ID) != 1 {
				t.Fatalf("retry: task %s with %d history messages, agent ran %d times; want task %s, no history, one run",
					task.ID, len(task.History), h.Agent.RunsOf(msg.ID), first.(*a2a.Task).ID)
			}
			if e := h.LastEvent(); e.Version != "1.0" || e.Scope != tc.tenant {
				t.Fatalf("last event %+v: want version 1.0, scope %q", e, tc.tenant)
			}

			ask := mwtest.KeyedMessage(t, idempotency.NewKey(), "reply under v1")
			ask.Metadata["trace"] = map[string]any{"tags": []any{"a"}}
			reply, err := tc.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: ask})
			if err != nil {
				t.Fatal(err)
			}
			again, err := tc.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: ask})
			if err != nil || mwtest.JSONOf(t, again) != mwtest.JSONOf(t, reply) || h.Agent.RunsOf(ask.ID) != 1 {
				t.Fatalf("retry of the reply: %s (%v), want %s once", mwtest.JSONOf(t, again), err, mwtest.JSONOf(t, reply))
			}
		})
	}
}
