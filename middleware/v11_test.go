package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// v11Task is a task as an A2A v1.1 server answers it: a generation, and a member no
// version of the kit knows, in an order and spacing of its own.
const v11Task = `{"id":"task-v11","contextId":"ctx-v11","status":{"state":"TASK_STATE_WORKING"},` +
	`"generation":"42", "x-future":{"nested":[1,"two",{"three":null}],"z":1.50},` + v11History + `,"metadata":{"k":"v"}}`

// v11History is v11Task's history member, and v11Last the same with its last
// message only, as a retry with historyLength 1 gets it.
const (
	v11History = `"history":[{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"one"}]}, ` +
		`{"messageId":"m-2","role":"ROLE_AGENT","parts":[{"text":"two"}]}]`
	v11Last = `"history":[{"messageId":"m-2","role":"ROLE_AGENT","parts":[{"text":"two"}]}]`
)

// v11Upstream answers every send, task read and subscription with v11Task, on
// JSON-RPC at /jsonrpc and HTTP+JSON under /rest: a2a-go v2.4.0 knows no generation.
func v11Upstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		answer := func(sse bool, data string) {
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", data)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, data)
		}
		wrapped := `{"task":` + v11Task + `}`
		if r.URL.Path == "/jsonrpc" {
			var call struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			_ = json.Unmarshal(body, &call)
			env := func(result string) string {
				return `{"jsonrpc":"2.0","id":` + string(call.ID) + `,"result":` + result + `}`
			}
			switch call.Method {
			case "SendMessage":
				answer(false, env(wrapped))
			case "SendStreamingMessage", "SubscribeToTask":
				answer(true, env(wrapped))
			case "GetTask":
				answer(false, env(v11Task))
			default:
				http.NotFound(w, r)
			}
			return
		}
		switch {
		case r.URL.Path == "/rest/message:send":
			answer(false, wrapped)
		case r.URL.Path == "/rest/message:stream", r.URL.Path == "/rest/tasks/task-v11:subscribe":
			answer(true, wrapped)
		case r.Method == http.MethodGet && r.URL.Path == "/rest/tasks/task-v11":
			answer(false, v11Task)
		default:
			http.NotFound(w, r)
		}
	})
}

// Replays pass every task member through unchanged, byte for byte: A2A v1.1's
// generation, and members no version of the kit knows.
func TestReplayPassesV11TaskThrough(t *testing.T) {
	for _, b := range wireclient.Bindings {
		for _, firstStreaming := range []bool{false, true} {
			// A harness per key: the upstream names one task for every send.
			h := mwtest.New(t, mwtest.Config{Inner: v11Upstream()})
			c := &wireclient.Client{BaseURL: h.Server.URL, HTTP: h.HTTP}
			key, id := idempotency.NewKey(), idempotency.NewKey()
			for i, streaming := range []bool{firstStreaming, false, true} {
				s := wireclient.Send{Binding: b, Streaming: streaming, MessageID: id, Key: key, Text: "echo"}
				a, err := c.Do(context.Background(), s)
				if err != nil {
					t.Fatalf("%s streaming %v: %v", b, streaming, err)
				}
				if a.Kind != wireclient.Task || a.Replayed != (i > 0) {
					t.Fatalf("%s streaming %v, send %d: %v (replayed %v)", b, streaming, i, a, a.Replayed)
				}
				if !bytes.Contains(a.Raw, []byte(v11Task)) {
					t.Fatalf("%s streaming %v, send %d: the task is not passed through unchanged:\n got %s\nwant it to contain %s",
						b, streaming, i, a.Raw, v11Task)
				}
				if want := `"task":` + v11Task + `}`; !strings.Contains(string(a.Raw), want) {
					t.Fatalf("%s: %s, want the task as the response's task member", b, a.Raw)
				}
			}
		}
	}
}

// A retry's historyLength trims the history and leaves every other byte of the task
// as the server wrote it; historyLength 0 cuts the member out.
func TestReplayHistoryLengthKeepsV11Task(t *testing.T) {
	for _, b := range wireclient.Bindings {
		h := mwtest.New(t, mwtest.Config{Inner: v11Upstream()})
		c := &wireclient.Client{BaseURL: h.Server.URL, HTTP: h.HTTP}
		s := wireclient.Send{Binding: b, MessageID: idempotency.NewKey(), Key: idempotency.NewKey(), Text: "echo"}
		if a, err := c.Do(context.Background(), s); err != nil || a.Kind != wireclient.Task {
			t.Fatalf("%s: first send: %v, %v", b, a, err)
		}
		for n, want := range map[int]string{1: strings.Replace(v11Task, v11History, v11Last, 1),
			0: strings.Replace(v11Task, v11History+",", "", 1)} {
			body := bytes.Replace(s.Body(), []byte(`"message":`), []byte(fmt.Sprintf(`"configuration":{"historyLength":%d},"message":`, n)), 1)
			a, err := c.DoBody(context.Background(), s, body)
			if err != nil || a.Kind != wireclient.Task || !a.Replayed {
				t.Fatalf("%s historyLength %d: %v, %v", b, n, a, err)
			}
			if !bytes.Contains(a.Raw, []byte(`"task":`+want+`}`)) {
				t.Fatalf("%s historyLength %d:\n got %s\nwant the task %s", b, n, a.Raw, want)
			}
		}
	}
}
