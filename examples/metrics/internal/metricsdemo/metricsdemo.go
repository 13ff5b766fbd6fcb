// Package metricsdemo is what the metrics examples share and is not about metrics:
// an echo agent that a2a-go serves on JSON-RPC behind the idempotency middleware, and
// the keyed sends, made with a2a-go's client, that make the middleware report a first
// send, a retry and a conflict.
package metricsdemo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// JSONRPCPath is where Handler serves the JSON-RPC binding.
const JSONRPCPath = "/jsonrpc"

// Handler returns an A2A server whose keyed sends the middleware reports to observe.
func Handler(observe func(middleware.Event)) (http.Handler, error) {
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Observe: observe})
	if err != nil {
		return nil, err
	}
	rh := a2asrv.NewHandler(echo{}, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	mux.Handle(JSONRPCPath, a2asrv.NewJSONRPCHandler(rh))
	return mw(mux), nil
}

// echo completes a task with the message's text as its artifact.
type echo struct{}

func (echo) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+ec.Message.Parts[0].Text())), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (echo) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Sends makes three keyed sends to the server at base, with key: a first send, its
// retry (the same message again) and a different message with the same key. The
// middleware reports them as claimed, replayed and conflict.
func Sends(ctx context.Context, hc *http.Client, base, key string) error {
	c, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		return err
	}
	first := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("book it"))
	other := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("book it twice"))
	for _, m := range []*a2a.Message{first, other} {
		if m.Metadata, m.Extensions, err = idempotency.SetKey(m.Metadata, m.Extensions, key); err != nil {
			return err
		}
	}
	for range 2 {
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: first}); err != nil {
			return fmt.Errorf("keyed send: %w", err)
		}
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: other}); !errors.Is(err, a2a.ErrInvalidParams) {
		return fmt.Errorf("a different message with the same key: got %v, want invalid params", err)
	}
	return nil
}
