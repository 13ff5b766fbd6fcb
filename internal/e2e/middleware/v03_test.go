package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	legacya2a "github.com/a2aproject/a2a-go/a2a"
	legacyclient "github.com/a2aproject/a2a-go/a2aclient"
	legacysrv "github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// legacyAgent is an agent of a2a-go v0.3.x (github.com/a2aproject/a2a-go): "reply"
// answers with a Message, anything else makes a task and completes it.
type legacyAgent struct {
	mu   sync.Mutex
	runs map[string]int
}

func (a *legacyAgent) runsOf(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[id]
}

func (a *legacyAgent) Execute(ctx context.Context, rc *legacysrv.RequestContext, q eventqueue.Queue) error {
	a.mu.Lock()
	a.runs[rc.Message.ID]++
	a.mu.Unlock()
	text := rc.Message.Parts[0].(legacya2a.TextPart).Text
	if strings.HasPrefix(text, "reply") {
		return q.Write(ctx, legacya2a.NewMessageForTask(legacya2a.MessageRoleAgent, rc, legacya2a.TextPart{Text: "reply to " + text}))
	}
	for _, ev := range []legacya2a.Event{
		legacya2a.NewSubmittedTask(rc, rc.Message),
		legacya2a.NewStatusUpdateEvent(rc, legacya2a.TaskStateWorking, nil),
	} {
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	completed := legacya2a.NewStatusUpdateEvent(rc, legacya2a.TaskStateCompleted, nil)
	completed.Final = true // a2a-go v0.3.x ends an execution at a final event
	if err := q.Write(ctx, legacya2a.NewArtifactEvent(rc, legacya2a.TextPart{Text: "echo: " + text})); err != nil {
		return err
	}
	return q.Write(ctx, completed)
}

func (a *legacyAgent) Cancel(ctx context.Context, rc *legacysrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, legacya2a.NewStatusUpdateEvent(rc, legacya2a.TaskStateCanceled, nil))
}

// legacySend sends msg through c, streaming or not, and returns the first event and
// the last state of the task the events name.
func legacySend(ctx context.Context, c *legacyclient.Client, streaming bool, msg *legacya2a.Message) (legacya2a.Event, legacya2a.TaskState, error) {
	params := &legacya2a.MessageSendParams{Message: msg}
	if !streaming {
		res, err := c.SendMessage(ctx, params)
		if task, ok := res.(*legacya2a.Task); ok {
			return res, task.Status.State, err
		}
		return res, "", err
	}
	var first legacya2a.Event
	var state legacya2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, params) {
		if err != nil {
			return first, state, err
		}
		if first == nil {
			first = ev
		}
		switch e := ev.(type) {
		case *legacya2a.Task:
			state = e.Status.State
		case *legacya2a.TaskStatusUpdateEvent:
			state = e.Status.State
		}
	}
	if first == nil {
		return nil, "", errors.New("empty stream")
	}
	return first, state, nil
}

// The middleware in front of a server built on a2a-go v0.3.x itself (not the v1.0
// SDK's compatibility layer), driven by that version's own client: retries get the
// same task and the agent runs once; refusals reach the client typed (their errors
// carry no data, which this client would fail to read in the v1.0 SDK's shape); a
// Message reply is replayed.
func TestLegacyServerAndClient(t *testing.T) {
	agent := &legacyAgent{runs: map[string]int{}}
	var mu sync.Mutex
	var events []middleware.Event
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Logger: mwtest.DiscardLogger(), Observe: func(e middleware.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(legacysrv.NewJSONRPCHandler(legacysrv.NewHandler(agent))))
	defer srv.Close()
	c, err := legacyclient.NewFromEndpoints(context.Background(),
		[]legacya2a.AgentInterface{{URL: srv.URL, Transport: legacya2a.TransportProtocolJSONRPC}},
		legacyclient.WithJSONRPCTransport(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keyed := func(key, text string) *legacya2a.Message {
		msg := legacya2a.NewMessage(legacya2a.MessageRoleUser, legacya2a.TextPart{Text: text})
		msg.Metadata = map[string]any{idempotency.MetadataKey: key}
		return msg
	}
	for _, streaming := range []bool{false, true} {
		key := idempotency.NewKey()
		msg := keyed(key, "echo legacy")
		first, _, err := legacySend(ctx, c, streaming, msg)
		if err != nil {
			t.Fatal(err)
		}
		id := first.TaskInfo().TaskID
		// (a2a-go v0.3.x answers a blocking send before it stores the completion, so
		// a retry at once may find the task still working; a stream follows it.)
		for _, s := range []bool{streaming, !streaming} {
			retry, state, err := legacySend(ctx, c, s, msg)
			task, ok := retry.(*legacya2a.Task)
			if err != nil || !ok || task.ID != id || s && state != legacya2a.TaskStateCompleted {
				t.Fatalf("retry (streaming=%v): %#v ending %s, %v; want task %s, completed", s, retry, state, err, id)
			}
		}
		if n := agent.runsOf(msg.ID); n != 1 {
			t.Fatalf("agent ran %d times, want 1", n)
		}

		other := keyed(key, "echo another")
		if _, _, err := legacySend(ctx, c, streaming, other); !errors.Is(err, legacya2a.ErrInvalidParams) || !strings.Contains(err.Error(), "already held") {
			t.Fatalf("reused key (streaming=%v): %v, want ErrInvalidParams saying the key is already held", streaming, err)
		}
		bad := keyed("short", "echo bad")
		if _, _, err := legacySend(ctx, c, streaming, bad); !errors.Is(err, legacya2a.ErrInvalidParams) || !strings.Contains(err.Error(), idempotency.ErrKeyTooShort.Error()) {
			t.Fatalf("malformed key (streaming=%v): %v, want ErrInvalidParams", streaming, err)
		}
		if agent.runsOf(other.ID) != 0 || agent.runsOf(bad.ID) != 0 {
			t.Fatal("the agent ran for a refused send")
		}

		ask := keyed(idempotency.NewKey(), "reply legacy")
		reply, _, err := legacySend(ctx, c, streaming, ask)
		if err != nil {
			t.Fatal(err)
		}
		again, _, err := legacySend(ctx, c, !streaming, ask)
		if err != nil || mwtest.JSONOf(t, again) != mwtest.JSONOf(t, reply) || agent.runsOf(ask.ID) != 1 {
			t.Fatalf("retry of the reply: %s (%v), want %s once", mwtest.JSONOf(t, again), err, mwtest.JSONOf(t, reply))
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, e := range events {
		if e.Binding != "JSONRPC" || e.Version != "0.3" {
			t.Fatalf("event %+v, want JSONRPC 0.3", e)
		}
	}
}

// badReader is a TaskReader that answers with JSON that is no v1.0 Task.
type badReader struct{}

func (badReader) ReadTask(context.Context, *http.Request, string, string) ([]byte, error) {
	return []byte(`{"id":5}`), nil
}

// A task that cannot be put in v0.3's shape (Options.Tasks answered something that
// is no v1.0 Task) answers a v0.3 retry with an internal error, typed on the client;
// nothing runs again.
func TestV03RetryOfUnconvertibleTask(t *testing.T) {
	for _, d := range []mwtest.Dialect{jsonrpc03, rest03} {
		t.Run(d.String(), func(t *testing.T) {
			h := newHarness(t, mwtest.Config{Tasks: func(*mwtest.Harness) middleware.TaskSource { return badReader{} }})
			c := h.Client(d, "", "")
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo unconvertible")
			if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err != nil {
				t.Fatal(err)
			}
			_, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
			if !errors.Is(err, a2a.ErrInternalError) || !strings.Contains(err.Error(), "could not be answered") {
				t.Fatalf("retry: %v, want an internal error", err)
			}
			// What the codec made of the task source's bytes is the server's business.
			if strings.Contains(err.Error(), "json") || strings.Contains(err.Error(), "unmarshal") {
				t.Fatalf("retry: %v: the answer carries the codec's internal error text", err)
			}
			if n := h.Agent.RunsOf(msg.ID); n != 1 {
				t.Fatalf("agent ran %d times, want 1", n)
			}
		})
	}
}
