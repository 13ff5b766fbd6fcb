package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// Early bind learns "does not stream" only from the card or a definite protocol
// answer, never from one client's error: a client's refused send leaves early bind
// on for the next send.
func TestEarlyBindSurvivesClientError(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch {
		case strings.Contains(string(c.Body), "bad-send"):
			// A client error, answered as a plain 400 before any stream.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"jsonrpc":"2.0","id":"1","error":{"code":-32602,"message":"bad params"}}`))
		case c.Method == "SendStreamingMessage":
			sseStart(w)
			sseResult(w, c, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`)
		default:
			rpcResult(w, c, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`)
		}
	}}
	opts := quietOptions()
	opts.EarlyBind = middleware.EarlyBindAlways
	front := oddFront(t, newIndex(), opts, odd)
	postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", idempotency.NewKey(), "m-bad", "bad-send"))
	before := odd.count("SendStreamingMessage")
	postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", idempotency.NewKey(), "m-good", "good"))
	if odd.count("SendStreamingMessage") != before+1 {
		t.Errorf("after one client's 400, the next keyed blocking send was forwarded as sent; want its streaming form")
	}
}

// Early bind answers the first send from the stream it read: the task as its events
// made it, not a GetTask that the server may owner-check or serve late.
func TestEarlyBindAnswersFromTheStream(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch c.Method {
		case "SendStreamingMessage":
			sseStart(w)
			sseResult(w, c, `{"task":`+taskJSON("t-s", "TASK_STATE_SUBMITTED")+`}`)
			sseResult(w, c, `{"statusUpdate":{"taskId":"t-s","contextId":"ctx-t-s","status":{"state":"TASK_STATE_WORKING","message":{"messageId":"w","role":"ROLE_AGENT","parts":[{"text":"working"}]}}}}`)
			sseResult(w, c, `{"artifactUpdate":{"taskId":"t-s","contextId":"ctx-t-s","artifact":{"artifactId":"a-1","parts":[{"text":"echo: "}]}}}`)
			sseResult(w, c, `{"artifactUpdate":{"taskId":"t-s","contextId":"ctx-t-s","append":true,"artifact":{"artifactId":"a-1","parts":[{"text":"hi"}]}}}`)
			sseResult(w, c, `{"statusUpdate":{"taskId":"t-s","contextId":"ctx-t-s","status":{"state":"TASK_STATE_COMPLETED"}}}`)
		default:
			// GetTask is owner-checked: the middleware's own read is denied.
			rpcErr(w, c, -32003, "not yours")
		}
	}}
	opts := quietOptions()
	opts.EarlyBind = middleware.EarlyBindAlways
	front := oddFront(t, newIndex(), opts, odd)
	status, _, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", idempotency.NewKey(), "m-1", "hi"))
	var resp struct {
		Result struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
				History   []json.RawMessage `json:"history"`
				Artifacts []struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifacts"`
			} `json:"task"`
		} `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &resp) != nil {
		t.Fatalf("client got %d %s; want the task", status, body)
	}
	task := resp.Result.Task
	if task.ID != "t-s" || task.Status.State != "TASK_STATE_COMPLETED" || len(task.Artifacts) != 1 ||
		len(task.Artifacts[0].Parts) != 2 || len(task.History) != 1 {
		t.Errorf("client got %s; want task t-s completed, with one artifact of two parts and the working message in its history", body)
	}
	if n := odd.count("GetTask"); n != 0 {
		t.Errorf("the middleware read the task %d times; want it answered from the stream", n)
	}
}

// Early bind changes the wire only in the method name: the server reads the very
// body whose key was claimed, case-variant duplicate members included.
func TestEarlyBindIsByteFaithful(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		sseStart(w)
		sseResult(w, c, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`)
	}}
	opts := quietOptions()
	opts.EarlyBind = middleware.EarlyBindAlways
	front := oddFront(t, newIndex(), opts, odd)
	key := idempotency.NewKey()
	// encoding/json reads the last of the case-variant members: PARAMS, keyed.
	body := []byte(`{"jsonrpc":"2.0", "id":7,"method" : "SendMessage",` +
		`"params":{"message":{"messageId":"m-other","role":"ROLE_USER","parts":[{"text":"other"}]}},` +
		`"PARAMS":{"message":{"messageId":"m-keyed","role":"ROLE_USER","parts":[{"text":"keyed"}],` +
		`"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}}}`)
	postTo(t, context.Background(), front.URL+"/", body)
	got, ok := odd.last("SendStreamingMessage")
	if !ok {
		t.Fatal("the server got no streaming form")
	}
	want := bytes.Replace(body, []byte(`"SendMessage"`), []byte(`"SendStreamingMessage"`), 1)
	if !bytes.Equal(got.Body, want) {
		t.Errorf("the server read\n%s\nwant\n%s", got.Body, want)
	}
}

// A streaming retry answered from a GetTask that the server pretty-prints gets one
// well-framed event: every line of the JSON has its own data: field.
func TestStreamReplayOfPrettyTask(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch c.Method {
		case "SendStreamingMessage":
			sseStart(w)
			sseResult(w, c, `{"task":`+taskJSON("t-p", "TASK_STATE_COMPLETED")+`}`)
		case "SubscribeToTask":
			rpcErr(w, c, -32004, "task is terminal")
		case "GetTask":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"1\",\n  \"result\": {\n    \"id\": \"t-p\",\n" +
				"    \"contextId\": \"c\",\n    \"status\": {\n      \"state\": \"TASK_STATE_COMPLETED\"\n    }\n  }\n}\n"))
		}
	}}
	front := oddFront(t, newIndex(), quietOptions(), odd)
	key := idempotency.NewKey()
	call := keyedCall(t, "SendStreamingMessage", key, "m-1", "hi")
	postTo(t, context.Background(), front.URL+"/", call)
	status, _, body := postTo(t, context.Background(), front.URL+"/", call)
	if status != http.StatusOK {
		t.Fatalf("retry: %d %s", status, body)
	}
	var data []string
	for line := range strings.SplitSeq(strings.TrimRight(string(body), "\n"), "\n") {
		v, ok := strings.CutPrefix(line, "data:")
		if !ok {
			t.Fatalf("retry's stream has a line that is no data field: %q in\n%s", line, body)
		}
		data = append(data, strings.TrimPrefix(v, " "))
	}
	var ev struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.Join(data, "\n")), &ev); err != nil || ev.Result.Task.ID != "t-p" {
		t.Errorf("retry's event does not read as the task (%v):\n%s", err, body)
	}
}
