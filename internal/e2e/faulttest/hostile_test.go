package faulttest_test

// TestHostileClients attacks a server behind the kit as a hostile or careless client
// would (issue 14): requests that announce large bodies and stall, floods of keyed
// follow-ups to tasks that do not exist, oversized ids and tenants, keyed JSON-RPC
// calls at paths that look like HTTP+JSON to a JSON-RPC handler mounted on "/", and a
// full index. The server's memory stays within the documented bounds, other tenants
// and later keyed sends keep working, and nothing runs twice.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// countingAgent completes a task per send and counts its runs by message id.
type countingAgent struct {
	mu   sync.Mutex
	runs map[string]int
}

func (a *countingAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.mu.Lock()
		a.runs[ec.Message.ID]++
		a.mu.Unlock()
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *countingAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// twice returns the message ids the agent ran more than once.
func (a *countingAgent) twice() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, n := range a.runs {
		if n > 1 {
			ids = append(ids, id)
		}
	}
	return ids
}

// The bounds the test holds the server to.
const (
	maxKeysPerScope = 1000
	maxIndexBytes   = 1 << 20
	// stalled requests announce this much and send one byte.
	announced = middleware.DefaultMaxBodyBytes
	stalled   = 100
	// Each stalled request may hold its first read buffer (32 KiB) and what net/http
	// and the goroutine take; without the fix each held the 10 MiB it announced.
	maxHeapPerStalled = 64 << 10
)

type hostileServer struct {
	url     string
	index   *memstore.Store
	agent   *countingAgent
	entered atomic.Int64 // requests that reached the middleware
}

func newHostileServer(t *testing.T) *hostileServer {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	s := &hostileServer{agent: &countingAgent{runs: map[string]int{}}}
	s.index = memstore.New(memstore.Options{MaxKeysPerScope: maxKeysPerScope, MaxBytes: maxIndexBytes})
	tasks := taskstore.NewInMemory(nil)
	rh := a2asrv.NewHandler(adapter.NewExecutor(s.agent, adapter.Options{Logger: log}), a2asrv.WithTaskStore(tasks),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, adapter.Options{Logger: log})), a2asrv.WithLogger(log))
	mux := http.NewServeMux()
	mux.Handle("/", a2asrv.NewJSONRPCHandler(rh)) // catch-all, as a2a-go's CLI and TCK servers mount it
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	mw, err := middleware.New(s.index, middleware.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	idem := mw(mux)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.entered.Add(1)
		idem.ServeHTTP(w, r)
	}))
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// rpc sends a JSON-RPC SendMessage of msg in tenant to path and returns the task id
// it answered with, or the JSON-RPC error code and the HTTP status.
func (s *hostileServer) rpc(t *testing.T, path, tenant string, msg *a2a.Message) (taskID string, code int) {
	id, code, _ := s.rpcStatus(t, path, tenant, msg)
	return id, code
}

func (s *hostileServer) rpcStatus(t *testing.T, path, tenant string, msg *a2a.Message) (taskID string, code, status int) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
		"params": a2a.SendMessageRequest{Tenant: tenant, Message: msg}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("%s answered %d %.200s", path, resp.StatusCode, raw)
	}
	if answer.Error != nil {
		return "", answer.Error.Code, resp.StatusCode
	}
	return answer.Result.Task.ID, 0, resp.StatusCode
}

func keyedMsg(t *testing.T, taskID string) *a2a.Message {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))
	msg.TaskID = a2a.TaskID(taskID)
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	return msg
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestHostileClients(t *testing.T) {
	s := newHostileServer(t)
	ctx := context.Background()

	t.Run("stalled bodies hold what they sent", func(t *testing.T) {
		before := heapAlloc()
		var conns []net.Conn
		for range stalled {
			c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			fmt.Fprintf(c, "POST /anything HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", announced)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for s.entered.Load() < stalled && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // let the middleware read the byte and wait for the rest
		grown := int64(heapAlloc()) - int64(before)
		t.Logf("%d requests announcing %d bytes and sending 1: heap grew %d bytes (%d per request)", stalled, announced, grown, grown/stalled)
		if grown > stalled*maxHeapPerStalled {
			t.Errorf("heap grew %d bytes, over %d", grown, stalled*maxHeapPerStalled)
		}
	})

	t.Run("follow-ups to unknown tasks hold no key", func(t *testing.T) {
		const flood = 3 * maxKeysPerScope
		var wg sync.WaitGroup
		var accepted atomic.Int64
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < flood; i += 8 {
					if id, _ := s.rpc(t, "/jsonrpc", "victim", keyedMsg(t, fmt.Sprintf("no-such-task-%d", i))); id != "" {
						accepted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		c, err := s.index.Capacity(ctx, "victim")
		if err != nil {
			t.Fatal(err)
		}
		if accepted.Load() != 0 || c.Held != 0 {
			t.Errorf("%d follow-ups to unknown tasks accepted, %d keys held in the tenant; want none", accepted.Load(), c.Held)
		}
		if id, code := s.rpc(t, "/jsonrpc", "victim", keyedMsg(t, "")); id == "" {
			t.Errorf("a keyed send of the flooded tenant after %d follow-ups: error %d, want a task", flood, code)
		}
	})

	t.Run("oversized ids and tenants are refused", func(t *testing.T) {
		before := s.index.Bytes()
		long := keyedMsg(t, "")
		long.ID = strings.Repeat("m", 1<<20)
		if _, code := s.rpc(t, "/jsonrpc", "", long); code != -32602 {
			t.Errorf("a 1 MiB message id: code %d, want -32602", code)
		}
		if _, code := s.rpc(t, "/jsonrpc", strings.Repeat("t", 4<<20), keyedMsg(t, "")); code != -32602 {
			t.Errorf("a 4 MiB tenant: code %d, want -32602", code)
		}
		if after := s.index.Bytes(); after != before {
			t.Errorf("the refused sends changed the index from %d to %d bytes", before, after)
		}
	})

	t.Run("catch-all JSON-RPC runs a keyed send once", func(t *testing.T) {
		msg := keyedMsg(t, "")
		first, _ := s.rpc(t, "/jsonrpc", "", msg)
		again, _ := s.rpc(t, "/x/message:send", "", msg)
		if first == "" || again != first {
			t.Errorf("the same keyed call at /jsonrpc and /x/message:send answered tasks %q and %q, want one", first, again)
		}
	})

	t.Run("a full index refuses new keys with 429, and retries still get their task", func(t *testing.T) {
		first := keyedMsg(t, "")
		task, _ := s.rpc(t, "/jsonrpc", "tenant-first", first)
		sends := 0
		for i := 0; ; i++ {
			id, code, status := s.rpcStatus(t, "/jsonrpc", fmt.Sprintf("tenant-%d", i), keyedMsg(t, ""))
			if id != "" {
				sends++
				continue
			}
			if status != http.StatusTooManyRequests {
				t.Fatalf("keyed send %d: HTTP %d code %d, want a task or 429", i, status, code)
			}
			break
		}
		held := s.index.Bytes()
		t.Logf("the index filled at %d bytes of %d after %d sends in a tenant each (%d bytes per key)", held, maxIndexBytes, sends, held/int64(sends+1))
		if held > maxIndexBytes {
			t.Errorf("the index holds %d bytes, over its bound %d", held, maxIndexBytes)
		}
		if again, code := s.rpc(t, "/jsonrpc", "tenant-first", first); again != task {
			t.Errorf("a retry in the full index: task %q code %d, want %q", again, code, task)
		}
	})

	if ids := s.agent.twice(); len(ids) > 0 {
		t.Errorf("the agent ran %d messages twice", len(ids))
	}
}
