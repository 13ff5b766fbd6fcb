package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

// Bug 6: the requests the middleware makes on a client's behalf (task reads, the "is
// it still running?" subscription) can never crash the process: the subscription
// that the probe cuts after a while, through an httputil.ReverseProxy, must not make
// the proxy abort with a panic nobody recovers. The scenario runs in a child
// process, so that a crash fails this test instead of the whole package.
func TestInnerRequestsCannotCrash(t *testing.T) {
	if os.Getenv("MIDDLEWARE_INNER_CHILD") == "1" {
		innerRequestsScenario(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInnerRequestsCannotCrash$", "-test.v")
	cmd.Env = append(os.Environ(), "MIDDLEWARE_INNER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the process serving the middleware died or failed (%v):\n%s", err, tail(out, 3000))
	}
}

func innerRequestsScenario(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch c.Method {
		case "SendStreamingMessage":
			// Bound at its first event, a status update; the task is never stored.
			sseStart(w)
			sseResult(w, c, `{"statusUpdate":{"taskId":"t-x","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`)
		case "GetTask":
			rpcErr(w, c, -32001, "task not found")
		case "SubscribeToTask":
			// Open, silent: the execution may still run.
			sseStart(w)
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		}
	}}
	front := oddFront(t, newIndex(), quietOptions(), behindProxy(t, odd, 0))
	key := idempotency.NewKey()
	postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendStreamingMessage", key, "m-1", "hi"))
	for range 3 {
		status, _, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
		if status == 0 {
			t.Fatalf("retry failed: %s", body)
		}
	}
	time.Sleep(200 * time.Millisecond) // time for a panic in a goroutine to land
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Client answers never carry internal text: a body that fails mid-read (its error
// names the server's own socket) is answered with what to do, not the error.
func TestUnreadableBodyHidesSocketError(t *testing.T) {
	h := wrap(t, newIndex(), quietOptions(), unreachable(t))
	r, _ := http.NewRequest(http.MethodPost, "/", &failingBody{prefix: `{"jsonrpc":"2.0",`,
		err: errors.New("read tcp 127.0.0.1:8090->127.0.0.1:51234: i/o timeout")})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code < 400 || w.Code >= 500 || containsAny(w.Body.Bytes(), "127.0.0.1", "i/o timeout", "read tcp") {
		t.Errorf("stalled body: %d %s; want a 4xx that names no socket", w.Code, w.Body)
	}
}

// failingBody reads prefix, then fails with err.
type failingBody struct {
	prefix string
	err    error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.prefix != "" {
		n := copy(p, b.prefix)
		b.prefix = b.prefix[n:]
		return n, nil
	}
	return 0, b.err
}

// A retry sent to a path where nothing serves the task is a client error: the
// server's own 404 stands, never a transient 503 that asks for a retry that cannot
// succeed.
func TestRetryToUnmountedPathIsNotTransient(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		rpcResult(w, c, `{"task":`+taskJSON("t-1", "TASK_STATE_COMPLETED")+`}`)
	}}
	mux := http.NewServeMux()
	mux.Handle("/rpc", odd)
	front := oddFront(t, newIndex(), quietOptions(), mux)
	call := keyedCall(t, "SendMessage", idempotency.NewKey(), "m-1", "hi")
	if status, _, body := postTo(t, context.Background(), front.URL+"/rpc", call); status != http.StatusOK {
		t.Fatalf("first send: %d %s", status, body)
	}
	status, h, body := postTo(t, context.Background(), front.URL+"/elsewhere", call)
	if status == http.StatusServiceUnavailable || h.Get("Retry-After") != "" || status < 400 || status >= 500 {
		t.Errorf("retry to an unmounted path: %d (Retry-After %q) %s; want the client error it is", status, h.Get("Retry-After"), body)
	}
}

// A v0.3 retry whose task the codec cannot convert gets an answer that says so, not
// a transient 503 (no retry can mend it) and not the codec's text.
func TestUnconvertibleTaskIsNotTransient(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch c.Method {
		case "message/send":
			rpcResult(w, c, `{"kind":"task","id":"t-1","contextId":"c","status":{"state":"completed"}}`)
		case "tasks/get":
			rpcResult(w, c, `{"kind":"task","id":"t-1","contextId":"c","status":{"state":"completed"},`+
				`"history":[{"kind":"message","messageId":"h","role":"user","parts":[{"kind":"bogus"}]}]}`)
		}
	}}
	front := oddFront(t, newIndex(), quietOptions(), odd)
	call := []byte(`{"jsonrpc":"2.0","id":"1","method":"message/send","params":{"message":{"kind":"message",` +
		`"messageId":"m-1","role":"user","parts":[{"kind":"text","text":"hi"}],` +
		`"metadata":{"` + idempotency.MetadataKey + `":"` + idempotency.NewKey() + `"}}}}`)
	if status, _, body := postTo(t, context.Background(), front.URL+"/", call); status != http.StatusOK {
		t.Fatalf("first send: %d %s", status, body)
	}
	status, h, body := postTo(t, context.Background(), front.URL+"/", call)
	if status == http.StatusServiceUnavailable || h.Get("Retry-After") != "" || containsAny(body, "bogus", "invalid part", "unknown kind") {
		t.Errorf("retry: %d (Retry-After %q) %s; want an answer that is not transient and carries no codec text", status, h.Get("Retry-After"), body)
	}
}
