package mwtest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
)

// A Dialect is an A2A binding in one protocol version.
type Dialect struct {
	Binding string // "JSONRPC" or "HTTP+JSON"
	Version string // "1.0" or "0.3"
}

// A2A v1.0's dialects.
var (
	JSONRPC10 = Dialect{"JSONRPC", "1.0"}
	REST10    = Dialect{"HTTP+JSON", "1.0"}
)

// Dialects are the dialects the harness drives: A2A v1.0's, which have tenants.
var Dialects = []Dialect{JSONRPC10, REST10}

func (d Dialect) String() string { return d.Binding + "-" + d.Version }

// A Mode is a dialect and whether the send streams.
type Mode struct {
	Dialect
	Streaming bool
}

// ModesOf returns every mode of ds: each dialect, unary and streaming.
func ModesOf(ds ...Dialect) []Mode {
	var ms []Mode
	for _, d := range ds {
		ms = append(ms, Mode{d, false}, Mode{d, true})
	}
	return ms
}

// Modes are the modes of Dialects.
var Modes = ModesOf(Dialects...)

func (m Mode) String() string {
	if m.Streaming {
		return m.Dialect.String() + "/stream"
	}
	return m.Dialect.String() + "/unary"
}

// Client returns an a2a-go client of dialect d, at base (the harness's server when
// empty), for tenant (none when empty).
func (h *Harness) Client(d Dialect, tenant, base string) *a2aclient.Client {
	h.T.Helper()
	if base == "" {
		base = h.Server.URL
	}
	var iface *a2a.AgentInterface
	if h.cfg.Interface != nil {
		iface = h.cfg.Interface(d, base)
	}
	switch {
	case iface != nil:
	case d.Binding == "JSONRPC":
		iface = a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC)
	case tenant != "":
		iface = a2a.NewAgentInterface(base+"/t", a2a.TransportProtocolHTTPJSON)
	default:
		iface = a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON)
	}
	if tenant != "" && d.Version != "1.0" {
		h.T.Fatalf("%s has no tenant", d)
	}
	iface.Tenant = tenant
	opts := []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(h.HTTP), a2aclient.WithRESTTransport(h.HTTP)}
	if h.cfg.ClientOptions != nil {
		opts = append(opts, h.cfg.ClientOptions(h.HTTP)...)
	}
	c, err := a2aclient.NewFromEndpoints(context.Background(), []*a2a.AgentInterface{iface}, opts...)
	if err != nil {
		h.T.Fatalf("a2aclient.NewFromEndpoints: %v", err)
	}
	return c
}

// Send sends req through c, streaming or not, and returns what came back: the one
// result, or every event of the stream until its end or its first error.
func Send(ctx context.Context, c *a2aclient.Client, streaming bool, req *a2a.SendMessageRequest) ([]a2a.Event, error) {
	if !streaming {
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			return nil, err
		}
		return []a2a.Event{res}, nil
	}
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// KeyedMessage returns a user message with text, carrying key.
func KeyedMessage(t *testing.T, key, text string) *a2a.Message {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	var err error
	msg.Metadata, msg.Extensions, err = idempotency.SetKey(msg.Metadata, msg.Extensions, key)
	if err != nil {
		t.Fatalf("SetKey: %v", err)
	}
	return msg
}

// TaskOf returns the task id an event names, or "".
func TaskOf(ev a2a.Event) a2a.TaskID {
	if _, ok := ev.(*a2a.Message); ok {
		return ""
	}
	return ev.TaskInfo().TaskID
}

// FinalState returns the state of the task after the events: the last status seen.
func FinalState(evs []a2a.Event) a2a.TaskState {
	var st a2a.TaskState
	for _, ev := range evs {
		switch e := ev.(type) {
		case *a2a.Task:
			st = e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			st = e.Status.State
		}
	}
	return st
}

// WaitState polls the task through c until it reaches state.
func WaitState(t *testing.T, c *a2aclient.Client, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err := c.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
		if err == nil && task.Status.State == state {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s did not reach %s (last: %v, %v)", id, state, task, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitInactive waits until a2a-go no longer runs an execution for task id: a
// subscription to it then fails.
func WaitInactive(t *testing.T, c *a2aclient.Client, id a2a.TaskID) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		for _, err = range c.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				break
			}
		}
		if errors.Is(err, a2a.ErrTaskNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still has an active execution", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Within returns the next value of ch, failing t after ten seconds: a deadlock is a
// failure.
func Within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing within 10s", what)
		var zero T
		return zero
	}
}

// JSONOf returns v as JSON.
func JSONOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
