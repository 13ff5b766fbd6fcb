package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// countingIndex counts Binds.
type countingIndex struct {
	idempotency.KeyIndex
	binds atomic.Int64
}

func (c *countingIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	c.binds.Add(1)
	return c.KeyIndex.Bind(ctx, scope, key, token, b)
}

// earlyBinder stands for code behind the middleware (the a2a-go adapter): it binds
// the claimed key to task "t-1" before its agent runs, then answers with the task,
// or with a Message when the text says so. It serves GetTask for the replays.
func earlyBinder(t *testing.T, claimed *atomic.Int64) http.Handler {
	return earlyBinderWith(t, claimed, nil, nil)
}

// earlyBinderWith is earlyBinder whose "slow reply" sends bind task "t-2", signal
// bound, and wait for proceed before answering with a Message; a2a-go creates no task
// for a Message reply, so task t-2 is never found.
func earlyBinderWith(t *testing.T, claimed *atomic.Int64, bound, proceed chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		task := `{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_WORKING"}}`
		if req.Method == "GetTask" {
			if strings.Contains(string(body), `"t-2"`) {
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32001,"message":"task not found"}}`)
				return
			}
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":`+task+`}`)
			return
		}
		cs, ok := middleware.ClaimedSendFrom(r.Context())
		if !ok {
			t.Errorf("a keyed first send reached the handler without its claim")
			return
		}
		claimed.Add(1)
		if strings.Contains(string(body), "slow reply") {
			if err := cs.Bind(r.Context(), idempotency.Binding{TaskID: "t-2"}); err != nil {
				t.Errorf("early bind: %v", err)
			}
			close(bound)
			<-proceed
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"message":{"messageId":"r-2","role":"ROLE_AGENT","parts":[{"text":"late"}]}}}`)
			return
		}
		if err := cs.Bind(r.Context(), idempotency.Binding{TaskID: "t-1"}); err != nil {
			t.Errorf("early bind: %v", err)
		}
		if strings.Contains(string(body), "reply") {
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"message":{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"ok"}]}}}`)
			return
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"task":`+task+`}}`)
	})
}

// Code behind the middleware binds through the ClaimedSend in the request context;
// the middleware then does not bind the same task again, and a Message answer is
// recorded as the reply of that task.
func TestEarlyBindThroughClaimedSend(t *testing.T) {
	idx := &countingIndex{KeyIndex: memstore.New(memstore.Options{})}
	var claimed atomic.Int64
	h := mwtest.New(t, mwtest.Config{Index: idx, Inner: earlyBinder(t, &claimed)})
	post := func(messageID, text, key string) string {
		body := `{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"` + messageID +
			`","role":"ROLE_USER","parts":[{"text":"` + text + `"}],"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}}}`
		_, got := httpDo(t, h.HTTP, "POST", h.Server.URL+"/jsonrpc", body, nil)
		return string(got)
	}

	key := idempotency.NewKey()
	first := post("m-1", "task", key)
	if !strings.Contains(first, `"task":{"id":"t-1"`) || idx.binds.Load() != 1 {
		t.Fatalf("first send %s with %d index binds, want the task and 1 bind", first, idx.binds.Load())
	}
	var retry struct {
		ID     string `json:"id"`
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if raw := post("m-1", "task", key); json.Unmarshal([]byte(raw), &retry) != nil || retry.ID != "x" || retry.Result.Task.ID != "t-1" {
		t.Fatalf("retry %s, want task t-1", raw)
	}

	key = idempotency.NewKey()
	first = post("m-2", "reply", key)
	if !strings.Contains(first, `"message":{"messageId":"r-1"`) || idx.binds.Load() != 3 {
		t.Fatalf("first send %s with %d index binds, want the Message and 2 more binds (task, then reply)", first, idx.binds.Load())
	}
	if retry := post("m-2", "reply", key); !strings.Contains(retry, `"message":{"messageId":"r-1"`) {
		t.Fatalf("retry %s, want the Message reply", retry)
	}
	if claimed.Load() != 2 {
		t.Fatalf("the handler ran %d first sends, want 2", claimed.Load())
	}
	h.ExpectOutcomes(middleware.OutcomeClaimed, middleware.OutcomeReplayed, middleware.OutcomeClaimed, middleware.OutcomeReplayed)
}

// A retry that arrives after the key was bound to a task id, while the agent is
// still to answer with a Message (so the task never comes to exist), waits and gets
// that Message instead of TaskNotFound.
func TestRetryWhileMessageReplyPending(t *testing.T) {
	var claimed atomic.Int64
	bound, proceed := make(chan struct{}), make(chan struct{})
	body := `{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"m-3","role":"ROLE_USER",` +
		`"parts":[{"text":"slow reply"}],"metadata":{"` + idempotency.MetadataKey + `":"` + idempotency.NewKey() + `"}}}}`
	h := mwtest.New(t, mwtest.Config{Inner: earlyBinderWith(t, &claimed, bound, proceed), Record: true,
		Opts: middleware.Options{ReplayWait: 10 * time.Second}})
	var once sync.Once
	release := func() { once.Do(func() { close(proceed) }) }
	t.Cleanup(release) // before the server closes, should the test fail early
	post := func(out chan<- string) {
		resp, err := h.HTTP.Post(h.Server.URL+"/jsonrpc", "application/json", strings.NewReader(body))
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		out <- string(got)
	}
	first := make(chan string, 1)
	go post(first)
	mwtest.Within(t, bound, "early bind")
	retry := make(chan string, 1)
	go post(retry)
	// The retry finds task t-2 bound but not found, and keeps looking.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !slices.ContainsFunc(h.Received.Exchanges(), func(x *mwtest.InnerExchange) bool {
		return strings.Contains(string(x.ReqBody), `"GetTask"`)
	}) {
		time.Sleep(time.Millisecond)
	}
	release()
	for _, got := range []string{mwtest.Within(t, first, "first send"), mwtest.Within(t, retry, "retry")} {
		if !strings.Contains(got, `"message":{"messageId":"r-2"`) {
			t.Fatalf("answer %s, want the Message reply", got)
		}
	}
	if claimed.Load() != 1 {
		t.Fatalf("the handler ran %d first sends", claimed.Load())
	}
}
