package grpcbinding

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

func TestObserveReportsGRPC(t *testing.T) {
	var mu sync.Mutex
	var events []middleware.Event
	observe := func(e middleware.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	s := startServer(t, serverConfig{keyed: true, opts: Options{Observe: observe}})
	c := s.client(t, a2a.TransportProtocolGRPC)
	key := idempotency.NewKey()
	req := keyedRequest(t, key)
	taskOf(t)(c.SendMessage(context.Background(), req))
	taskOf(t)(c.SendMessage(context.Background(), req))
	for _, err := range c.SendStreamingMessage(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SendMessage(context.Background(), keyedRequest(t, key)); err == nil {
		t.Fatal("a reused key was not refused")
	}
	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		o         middleware.Outcome
		streaming bool
	}{{middleware.OutcomeClaimed, false}, {middleware.OutcomeReplayed, false}, {middleware.OutcomeReplayed, true}, {middleware.OutcomeConflict, false}}
	if len(events) != len(want) {
		t.Fatalf("events %+v, want %d", events, len(want))
	}
	for i, e := range events {
		if e.Outcome != want[i].o || e.Streaming != want[i].streaming || e.Binding != middleware.BindingGRPC || e.Version != middleware.Version10 {
			t.Errorf("event %d: %+v, want %s (streaming %v) on GRPC 1.0", i, e, want[i].o, want[i].streaming)
		}
	}
}

// principalScope scopes keys by the caller's x-principal metadata, and refuses calls
// without it.
func principalScope(ctx context.Context, tenant string) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	p := md.Get("x-principal")
	if len(p) == 0 {
		return "", errors.New("no principal: send x-principal")
	}
	return tenant + "/" + p[0], nil
}

func TestScopeOption(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, opts: Options{Scope: principalScope}})
	raw := s.raw(t)
	req := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
	as := func(p string) context.Context {
		return metadata.AppendToOutgoingContext(context.Background(), "x-principal", p)
	}
	first, err := raw.SendMessage(as("alice"), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := raw.SendMessage(as("alice"), req)
	if err != nil || again.GetTask().GetId() != first.GetTask().GetId() {
		t.Fatalf("alice's retry: %v, %v; want her task %s", again, err, first.GetTask().GetId())
	}
	other, err := raw.SendMessage(as("bob"), req)
	if err != nil || other.GetTask().GetId() == first.GetTask().GetId() {
		t.Fatalf("bob's send of the same key: %v, %v; want a task of his own", other, err)
	}
	wantRuns(t, s, 2)
	_, err = raw.SendMessage(context.Background(), req)
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "no principal")
	wantRuns(t, s, 2)
}

func TestTasksOption(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, readStore: true})
	c := s.client(t, a2a.TransportProtocolGRPC)
	req := keyedRequest(t, idempotency.NewKey())
	first := taskOf(t)(c.SendMessage(context.Background(), req))
	retry := taskOf(t)(c.SendMessage(context.Background(), req))
	if retry.ID != first.ID || retry.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("retry read from the store: %s %s, want %s completed", retry.ID, retry.Status.State, first.ID)
	}
	wantRuns(t, s, 1)
}

// A server the kit cannot see inside (no adapter): the interceptors bind the key to
// what the first answer carries, and a retry gets that.
func TestServerWithoutAdapter(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		s := startServer(t, serverConfig{keyed: true, noAdapter: true})
		c := s.client(t, a2a.TransportProtocolGRPC)
		req := keyedRequest(t, idempotency.NewKey())
		var first a2a.TaskID
		if streaming {
			for ev, err := range c.SendStreamingMessage(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
				if task, ok := ev.(*a2a.Task); ok && first == "" {
					first = task.ID
				}
			}
		} else {
			first = taskOf(t)(c.SendMessage(context.Background(), req)).ID
		}
		if retry := taskOf(t)(c.SendMessage(context.Background(), req)); retry.ID != first {
			t.Fatalf("streaming %v: retry got %s, want %s", streaming, retry.ID, first)
		}
		wantRuns(t, s, 1)
	}
}

// readersOnly is an a2a-go call interceptor standing for a server's authorization:
// only callers with x-reader metadata may read tasks.
type readersOnly struct{}

func (readersOnly) Before(ctx context.Context, cc *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	if _, ok := cc.ServiceParams().Get("x-reader"); cc.Method() == "GetTask" && !ok {
		return ctx, nil, a2a.ErrUnauthorized
	}
	return ctx, nil, nil
}

func (readersOnly) After(context.Context, *a2asrv.CallContext, *a2asrv.Response) error { return nil }

// A replay reads the task through the service with the retry's own metadata, so the
// server's authorization applies to it, and its refusal is relayed as it is.
func TestReplayAuthorizedByService(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true, interceptors: []a2asrv.CallInterceptor{readersOnly{}}})
	raw := s.raw(t)
	req := rawRequest(t, keyedRequest(t, idempotency.NewKey()))
	reader := metadata.AppendToOutgoingContext(context.Background(), "x-reader", "yes")
	first, err := raw.SendMessage(reader, req)
	if err != nil {
		t.Fatal(err)
	}
	retry, err := raw.SendMessage(reader, req)
	if err != nil || retry.GetTask().GetId() != first.GetTask().GetId() {
		t.Fatalf("a reader's retry: %v, %v; want task %s", retry, err, first.GetTask().GetId())
	}
	_, err = raw.SendMessage(context.Background(), req)
	if g := statusOf(t, err); g.code != codes.PermissionDenied {
		t.Fatalf("a retry by a caller who may not read the task: %v (%s), want the service's PERMISSION_DENIED", g.code, g.message)
	}
	wantRuns(t, s, 1)
}
