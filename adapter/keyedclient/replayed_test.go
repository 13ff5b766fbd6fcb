package keyedclient_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// WatchReplay tells a client whether an answer was served from a first attempt:
// not the first send's, and every retry's, unary and streaming.
func TestWatchReplay(t *testing.T) {
	srv := keyedServer(t, &testkit.Agent{}, memstore.New(memstore.Options{}), middleware.Options{})
	for _, binding := range bindings {
		c := keyedClient(t, srv.URL, binding, keyedclient.Options{Retry: fast})
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
		if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
			t.Fatal(err)
		}
		for i, streaming := range []bool{false, false, true} {
			ctx, replay := keyedclient.WatchReplay(context.Background())
			req := &a2a.SendMessageRequest{Message: msg}
			if streaming {
				for _, err := range c.SendStreamingMessage(ctx, req) {
					if err != nil {
						t.Fatal(err)
					}
				}
			} else if _, err := c.SendMessage(ctx, req); err != nil {
				t.Fatal(err)
			}
			if !replay.Answered() || replay.Replayed() != (i > 0) {
				t.Fatalf("%s, send %d (streaming %v): answered %v, replayed %v; want replayed %v",
					binding, i, streaming, replay.Answered(), replay.Replayed(), i > 0)
			}
		}
	}
}
