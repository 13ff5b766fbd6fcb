package grpcbinding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
)

// taskOf returns a function that checks that a send's result is a task, and
// returns it: taskOf(t)(c.SendMessage(ctx, req)).
func taskOf(t testing.TB) func(a2a.SendMessageResult, error) *a2a.Task {
	return func(res a2a.SendMessageResult, err error) *a2a.Task {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("result %T, want *a2a.Task", res)
		}
		return task
	}
}

func wantRuns(t testing.TB, s *server, n int64) {
	t.Helper()
	if got := s.agent.Runs(); got != n {
		t.Fatalf("agent ran %d times, want %d", got, n)
	}
}

func TestRetryGetsSameTask(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := keyedRequest(t, idempotency.NewKey())
	first := taskOf(t)(c.SendMessage(context.Background(), req))
	retry := taskOf(t)(c.SendMessage(context.Background(), req))
	if retry.ID != first.ID {
		t.Fatalf("retry got task %s, want the first attempt's %s", retry.ID, first.ID)
	}
	if retry.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("retry got state %s, want the task as it is now (completed)", retry.Status.State)
	}
	wantRuns(t, s, 1)

	// The answers name the extension in their response metadata.
	var header metadata.MD
	if _, err := s.raw(t).SendMessage(context.Background(), rawRequest(t, req), grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(header.Get("a2a-extensions"), idempotency.ExtensionURI) {
		t.Fatalf("replay header a2a-extensions = %q, want the extension", header.Get("a2a-extensions"))
	}
	header = nil
	if _, err := s.raw(t).SendMessage(context.Background(), rawRequest(t, keyedRequest(t, idempotency.NewKey())), grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(header.Get("a2a-extensions"), idempotency.ExtensionURI) {
		t.Fatalf("first send header a2a-extensions = %q, want the extension", header.Get("a2a-extensions"))
	}
	// And on streams: a first send's and a replay's.
	for _, r := range []*a2a.SendMessageRequest{keyedRequest(t, idempotency.NewKey()), req} {
		stream, err := s.raw(t).SendStreamingMessage(context.Background(), rawRequest(t, r))
		if err != nil {
			t.Fatal(err)
		}
		header, err = stream.Header()
		if err != nil || !slices.Contains(header.Get("a2a-extensions"), idempotency.ExtensionURI) {
			t.Fatalf("stream header a2a-extensions = %q (%v), want the extension", header.Get("a2a-extensions"), err)
		}
		for err == nil {
			_, err = stream.Recv()
		}
		if err != io.EOF {
			t.Fatal(err)
		}
	}
	wantRuns(t, s, 3)
}

func TestRetryHistoryLength(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := keyedRequest(t, idempotency.NewKey())
	first := taskOf(t)(c.SendMessage(context.Background(), req))
	if len(first.History) == 0 {
		t.Fatal("the first answer has no history to shape")
	}
	zero := 0
	retry := *req
	retry.Config = &a2a.SendMessageConfig{HistoryLength: &zero}
	got := taskOf(t)(c.SendMessage(context.Background(), &retry))
	if got.ID != first.ID || len(got.History) != 0 {
		t.Fatalf("retry with historyLength 0: task %s with %d history messages, want %s with none", got.ID, len(got.History), first.ID)
	}
}

func TestMessageReplyReplayed(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, agent: &testkit.Agent{ReplyMessage: true}})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := keyedRequest(t, idempotency.NewKey())
	first, err := c.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := c.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m1, ok1 := first.(*a2a.Message)
	m2, ok2 := retry.(*a2a.Message)
	if !ok1 || !ok2 || m1.ID != m2.ID {
		t.Fatalf("answers %#v and %#v, want the same Message twice", first, retry)
	}
	wantRuns(t, s, 1)
}

func TestReuseRefused(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	key := idempotency.NewKey()
	taskOf(t)(c.SendMessage(context.Background(), keyedRequest(t, key)))
	_, err := c.SendMessage(context.Background(), keyedRequest(t, key))
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "already held") {
		t.Fatalf("a2a-go client got %v, want ErrInvalidParams saying already held", err)
	}
	_, err = s.raw(t).SendMessage(context.Background(), rawRequest(t, keyedRequest(t, key)))
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "already held")
	wantRuns(t, s, 1)
}

func TestMalformedKeysRefused(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	raw := s.raw(t)
	withKey := func(v *structpb.Value) *a2apb.SendMessageRequest {
		req := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
		req.Message.Metadata.Fields[idempotency.MetadataKey] = v
		return req
	}
	noID := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
	noID.Message.MessageId = ""
	tests := []struct {
		name string
		req  *a2apb.SendMessageRequest
		want string
	}{
		{"too short", withKey(structpb.NewStringValue("short")), idempotency.ErrKeyTooShort.Error()},
		{"too long", withKey(structpb.NewStringValue(strings.Repeat("a", 256))), idempotency.ErrKeyTooLong.Error()},
		{"bad character", withKey(structpb.NewStringValue("0123456789abcdef 0")), idempotency.ErrKeyInvalidCharacter.Error()},
		{"number", withKey(structpb.NewNumberValue(42)), idempotency.ErrKeyNotString.Error()},
		{"null", withKey(structpb.NewNullValue()), idempotency.ErrKeyNotString.Error()},
		{"no messageId", noID, "messageId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header metadata.MD
			_, err := raw.SendMessage(context.Background(), tt.req, grpc.Header(&header))
			wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", tt.want)
			if !slices.Contains(header.Get("a2a-extensions"), idempotency.ExtensionURI) {
				t.Fatalf("a2a-extensions = %q, want the extension", header.Get("a2a-extensions"))
			}
			stream, err := raw.SendStreamingMessage(context.Background(), tt.req)
			if err == nil {
				_, err = stream.Recv()
			}
			wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", tt.want)
		})
	}
	wantRuns(t, s, 0)
}

func TestCannotHonourKeys(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, noIndex: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	_, err := c.SendMessage(context.Background(), keyedRequest(t, idempotency.NewKey()))
	if !errors.Is(err, a2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "cannot honour") {
		t.Fatalf("a2a-go client got %v, want ErrUnsupportedOperation saying cannot honour", err)
	}
	_, err = s.raw(t).SendMessage(context.Background(), rawRequest(t, keyedRequest(t, idempotency.NewKey())))
	wantStatus(t, err, codes.FailedPrecondition, "UNSUPPORTED_OPERATION", "cannot honour")
	wantRuns(t, s, 0)
	// An unkeyed send is unaffected.
	taskOf(t)(c.SendMessage(context.Background(), unkeyedRequest()))
	wantRuns(t, s, 1)
}

func TestFailingIndexUnavailable(t *testing.T) {
	index := testkit.NewFaultyIndex(newIndex())
	s := startServer(t, serverConfig{keyed: true, index: index})
	raw := s.raw(t)
	check := func(t *testing.T, err error, trailer metadata.MD) {
		t.Helper()
		g := wantStatus(t, err, codes.Unavailable, "SERVER_ERROR", "unavailable")
		if g.retryDelay <= 0 {
			t.Fatalf("RetryInfo delay %v, want one", g.retryDelay)
		}
		if g.info.GetMetadata()["retryAfterSeconds"] == "" {
			t.Fatalf("ErrorInfo metadata %v, want retryAfterSeconds", g.info.GetMetadata())
		}
		if trailer != nil && len(trailer.Get("retry-after")) == 0 {
			t.Fatalf("trailer %v, want retry-after", trailer)
		}
	}
	// (A failing bind is no refusal: the adapter binds once the task is stored, after
	// the agent started; see adapter's TestBindFailureKeepsKeyPending.)
	for _, op := range []string{"claim"} {
		t.Run(op, func(t *testing.T) {
			index.SetFail(testkit.OpClaim, true)
			defer index.SetFail(testkit.OpClaim, false)
			var trailer metadata.MD
			_, err := raw.SendMessage(context.Background(), rawRequest(t, keyedRequest(t, idempotency.NewKey())), grpc.Trailer(&trailer))
			check(t, err, trailer)
			stream, err := raw.SendStreamingMessage(context.Background(), rawRequest(t, keyedRequest(t, idempotency.NewKey())))
			if err == nil {
				for err == nil {
					_, err = stream.Recv()
				}
				trailer = stream.Trailer()
			}
			check(t, err, trailer)
			wantRuns(t, s, 0)
		})
	}
}

// TestConcurrentIdenticalSends sends 64 identical keyed sends at once, half of them
// streaming, while the agent is held: the agent runs once, and every answer names
// its task. IDEMPOTENCY_LONG=1 does it for 100 keys.
func TestConcurrentIdenticalSends(t *testing.T) {
	keys := 1
	if os.Getenv("IDEMPOTENCY_LONG") == "1" {
		keys = 100
	}
	hold := make(chan struct{})
	s := startServer(t, serverConfig{keyed: true, agent: &testkit.Agent{Hold: hold}})
	c := s.client(t, a2a.TransportProtocolGRPC)
	go func() {
		for range time.Tick(50 * time.Millisecond) {
			select {
			case hold <- struct{}{}: // let one run go on now and then
			case <-t.Context().Done():
				return
			}
		}
	}()
	for k := range keys {
		if id, err := sendConcurrently(c, keyedRequest(t, idempotency.NewKey()), 64); err != nil {
			t.Fatalf("key %d: %v", k, err)
		} else if id == "" {
			t.Fatalf("key %d: no task", k)
		}
		wantRuns(t, s, int64(k+1))
	}
}

// sendConcurrently sends n copies of req at once, the odd ones streaming, and
// returns the one task all the answers name, or an error.
func sendConcurrently(c *a2aclient.Client, req *a2a.SendMessageRequest, n int) (a2a.TaskID, error) {
	ids := make(chan a2a.TaskID, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := *req // a2a-go's client writes the tenant into the request it sends
			if i%2 == 1 {
				for ev, err := range c.SendStreamingMessage(context.Background(), &req) {
					if err != nil {
						errs <- err
						return
					}
					if task, ok := ev.(*a2a.Task); ok {
						ids <- task.ID
						return
					}
				}
				errs <- errors.New("stream ended without a task")
				return
			}
			res, err := c.SendMessage(context.Background(), &req)
			if err != nil {
				errs <- err
				return
			}
			ids <- res.(*a2a.Task).ID
		})
	}
	wg.Wait()
	close(ids)
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	var first a2a.TaskID
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first {
			return "", fmt.Errorf("answers name tasks %s and %s, want one task", first, id)
		}
	}
	return first, nil
}

func TestStreamingRetryAttachesLive(t *testing.T) {
	hold := make(chan struct{})
	s := startServer(t, serverConfig{keyed: true, agent: &testkit.Agent{Hold: hold}})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := keyedRequest(t, idempotency.NewKey())

	ctx, cancel := context.WithCancel(context.Background())
	var taskID a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := ev.(*a2a.Task); ok {
			taskID = task.ID
			break // the client leaves mid-stream
		}
	}
	cancel()

	var events []a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if len(events) == 0 {
			task, ok := ev.(*a2a.Task)
			if !ok || task.ID != taskID || task.Status.State.Terminal() {
				t.Fatalf("first event of the retry %#v, want the running task %s", ev, taskID)
			}
			close(hold) // the agent goes on while the retry is attached
		}
		events = append(events, ev)
	}
	last, ok := events[len(events)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || last.Status.State != a2a.TaskStateCompleted || len(events) < 3 {
		t.Fatalf("retry got %d events ending with %#v, want the live events up to completion", len(events), events[len(events)-1])
	}
	wantRuns(t, s, 1)

	// A streaming retry of the finished task gets the task alone.
	events = events[:0]
	for ev, err := range c.SendStreamingMessage(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if task, ok := events[0].(*a2a.Task); len(events) != 1 || !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("retry of a finished task got %d events, first %#v; want the completed task alone", len(events), events[0])
	}
	wantRuns(t, s, 1)
}

func TestInFlightUnavailable(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	s := startServer(t, serverConfig{keyed: true, agent: holdFirst(hold),
		opts: Options{ReplayWait: 100 * time.Millisecond}})
	raw := s.raw(t)
	req := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
	stream, err := raw.SendStreamingMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream
	waitFor(t, func() bool { return s.agent.Runs() == 1 })
	var trailer metadata.MD
	_, err = raw.SendMessage(context.Background(), req, grpc.Trailer(&trailer))
	g := wantStatus(t, err, codes.Unavailable, "SERVER_ERROR", "still in flight")
	if g.retryDelay <= 0 || len(trailer.Get("retry-after")) == 0 {
		t.Fatalf("RetryInfo %v, trailer %v: want the delay in both", g.retryDelay, trailer)
	}
	wantRuns(t, s, 1)
}

func TestTaskGoneNotFound(t *testing.T) {
	index := newIndex()
	s := startServer(t, serverConfig{keyed: true, index: index, opts: Options{Lease: 50 * time.Millisecond}})
	req := keyedRequest(t, idempotency.NewKey())
	key, _, _ := adapter.MessageKey(req.Message)
	c, err := index.Claim(context.Background(), "", key, req.Message.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := index.Bind(context.Background(), "", key, c.Token, idempotency.Binding{TaskID: "deleted-task"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // the first attempt's lease is over: the task is gone, not coming
	_, err = s.raw(t).SendMessage(context.Background(), rawRequest(t, req))
	wantStatus(t, err, codes.NotFound, "TASK_NOT_FOUND", "no longer exists")
	_, err = s.client(t, a2a.TransportProtocolGRPC).SendMessage(context.Background(), req)
	if !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("a2a-go client got %v, want ErrTaskNotFound", err)
	}
	wantRuns(t, s, 0)
}

func TestCrossBindingRetries(t *testing.T) {
	for _, tt := range []struct {
		first, retry a2a.TransportProtocol
		tenant       string // the scope on both bindings (the harness's HTTP+JSON has no tenant routes)
	}{
		{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolGRPC, ""},
		{a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC, ""},
		{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolGRPC, "acme"},
		{a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC, "acme"},
		{a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC, ""},
		{a2a.TransportProtocolGRPC, a2a.TransportProtocolHTTPJSON, ""},
	} {
		t.Run(string(tt.first)+" then "+string(tt.retry)+" "+tt.tenant, func(t *testing.T) {
			s := startServer(t, serverConfig{keyed: true})
			req := keyedRequest(t, idempotency.NewKey())
			req.Tenant = tt.tenant
			first := taskOf(t)(s.client(t, tt.first).SendMessage(context.Background(), req))
			retry := taskOf(t)(s.client(t, tt.retry).SendMessage(context.Background(), req))
			if retry.ID != first.ID {
				t.Fatalf("retry got task %s, want %s", retry.ID, first.ID)
			}
			var streamed *a2a.Task
			for ev, err := range s.client(t, tt.retry).SendStreamingMessage(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
				if task, ok := ev.(*a2a.Task); ok && streamed == nil {
					streamed = task
				}
			}
			if streamed == nil || streamed.ID != first.ID {
				t.Fatalf("streaming retry got %v, want task %s", streamed, first.ID)
			}
			wantRuns(t, s, 1)
		})
	}
}

func TestCrossBindingMessageReply(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, agent: &testkit.Agent{ReplyMessage: true}})
	req := keyedRequest(t, idempotency.NewKey())
	first, err := s.client(t, a2a.TransportProtocolJSONRPC).SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := s.client(t, a2a.TransportProtocolGRPC).SendMessage(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m1, ok1 := first.(*a2a.Message)
	m2, ok2 := retry.(*a2a.Message)
	if !ok1 || !ok2 || m1.ID != m2.ID || m2.Parts[0].Text() != "reply: hello" {
		t.Fatalf("answers %#v and %#v, want the same Message over both bindings", first, retry)
	}
	wantRuns(t, s, 1)
}

func TestUnkeyedPassesThrough(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := unkeyedRequest()
	taskOf(t)(c.SendMessage(context.Background(), req))
	taskOf(t)(c.SendMessage(context.Background(), req))
	wantRuns(t, s, 2)
	var header metadata.MD
	stream, err := s.raw(t).SendStreamingMessage(context.Background(), rawRequest(t, req))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = stream.Recv()
	}
	if err != io.EOF {
		t.Fatal(err)
	}
	header, _ = stream.Header()
	if len(header.Get("a2a-extensions")) != 0 {
		t.Fatalf("an unkeyed send got a2a-extensions %q", header.Get("a2a-extensions"))
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
	}
}

// A retry over gRPC while the first attempt, made over JSON-RPC, is still running
// meets its claim and gets the running task.
func TestCrossBindingRetryWhileRunning(t *testing.T) {
	hold := make(chan struct{})
	s := startServer(t, serverConfig{keyed: true, agent: &testkit.Agent{Hold: hold}})
	req := keyedRequest(t, idempotency.NewKey())
	firstDone := make(chan a2a.TaskID, 1)
	jsonrpc := s.client(t, a2a.TransportProtocolJSONRPC)
	go func() {
		var id a2a.TaskID
		for ev, err := range jsonrpc.SendStreamingMessage(context.Background(), req) {
			if task, ok := ev.(*a2a.Task); ok && err == nil && id == "" {
				id = task.ID
			}
		}
		firstDone <- id
	}()
	waitFor(t, func() bool { return s.agent.Runs() == 1 })
	retry := *req
	task := taskOf(t)(s.client(t, a2a.TransportProtocolGRPC).SendMessage(context.Background(), &retry))
	if task.Status.State.Terminal() {
		t.Fatalf("the retry got the task %s, want it still running", task.Status.State)
	}
	close(hold)
	if id := <-firstDone; id != task.ID {
		t.Fatalf("the retry got task %s, the first attempt %s", task.ID, id)
	}
	wantRuns(t, s, 1)
}

// With SoleInstance, a key whose task is not stored yet counts as gone unless its
// execution runs here: a subscription through the service tells that it does, and
// the retry is answered as in flight, not NOT_FOUND.
func TestSoleInstanceTaskNotStoredYet(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	s := startServer(t, serverConfig{keyed: true, agent: holdFirst(hold),
		opts: Options{ReplayWait: 50 * time.Millisecond, SoleInstance: true}})
	raw := s.raw(t)
	req := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
	if _, err := raw.SendStreamingMessage(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return s.agent.Runs() == 1 })
	_, err := raw.SendMessage(context.Background(), req)
	wantStatus(t, err, codes.Unavailable, "SERVER_ERROR", "still in flight")
	wantRuns(t, s, 1)
}
