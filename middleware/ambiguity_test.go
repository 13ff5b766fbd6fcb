package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// The rule of ambiguity (issue 23): a key is released only when it is certain that
// nothing ran, and a claimed send is forwarded at most once, whatever its mode.

// Bug 1: a keyed blocking send forwarded in its streaming form (early bind) whose
// answer is not a stream is never forwarded a second time: the server may have run
// it. The answer binds the key when it carries a task, and otherwise the key stays
// pending (a cut, a 502 of the hop in front, a header timeout).
func TestEarlyBindNeverSendsTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// answer is the server's answer to the streaming form.
		answer func(w http.ResponseWriter, c oddCall)
		proxy  bool
		// bound: the answer names a task, which binds the key.
		bound bool
	}{
		{"json-to-stream", func(w http.ResponseWriter, c oddCall) {
			rpcResult(w, c, `{"task":`+taskJSON("t-json", "TASK_STATE_COMPLETED")+`}`)
		}, false, true},
		{"cut-after-write", func(w http.ResponseWriter, c oddCall) { cut(w) }, true, false},
		{"header-timeout", func(w http.ResponseWriter, c oddCall) { time.Sleep(600 * time.Millisecond) }, true, false},
		{"stream-fails-before-first-event", func(w http.ResponseWriter, c oddCall) { sseStart(w) }, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
				switch c.Method {
				case "SendStreamingMessage":
					tc.answer(w, c)
				case "SendMessage":
					rpcResult(w, c, `{"task":`+taskJSON("t-unary", "TASK_STATE_COMPLETED")+`}`)
				default:
					rpcErr(w, c, -32001, "task not found")
				}
			}}
			var next http.Handler = odd
			if tc.proxy {
				next = behindProxy(t, odd, 300*time.Millisecond)
			}
			index := newIndex()
			opts := quietOptions()
			opts.EarlyBind = middleware.EarlyBindAlways
			front := oddFront(t, index, opts, next)
			key := idempotency.NewKey()
			status, _, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
			if n := odd.sends(); n != 1 {
				t.Fatalf("one client send reached the server %d times (%d streaming, %d unary); want once",
					n, odd.count("SendStreamingMessage"), odd.count("SendMessage"))
			}
			pending, held := pendingIn(t, index, key)
			switch {
			case tc.bound && (pending || !held):
				t.Errorf("the answer named a task, but the key is not bound (held %v)", held)
			case !tc.bound && !pending:
				t.Errorf("the outcome is unknown, but the key is not pending (held %v)", held)
			}
			if tc.bound && (status != http.StatusOK || !strings.Contains(string(body), "t-json")) {
				t.Errorf("client got %d %s; want the server's task t-json", status, body)
			}
			if containsAny(body, "127.0.0.1", "dial tcp", "EOF") {
				t.Errorf("client answer carries internal text: %s", body)
			}
		})
	}
}

// A streaming form refused as a protocol the server does not serve (405, method not
// found) is certain not to have run: the claim is released, the server no longer
// gets streaming forms, and the send runs once, as it was sent, under a claim of
// its own.
func TestEarlyBindDefiniteNoStream(t *testing.T) {
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		switch c.Method {
		case "SendStreamingMessage":
			rpcErr(w, c, -32601, "method not found")
		case "SendMessage":
			rpcResult(w, c, `{"task":`+taskJSON("t-unary", "TASK_STATE_COMPLETED")+`}`)
		}
	}}
	index := newIndex()
	opts := quietOptions()
	opts.EarlyBind = middleware.EarlyBindAlways
	front := oddFront(t, index, opts, odd)
	for i, key := range []string{idempotency.NewKey(), idempotency.NewKey()} {
		status, _, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
		if status != http.StatusOK || !strings.Contains(string(body), "t-unary") {
			t.Fatalf("send %d: client got %d %s; want the unary answer", i, status, body)
		}
		if pending, held := pendingIn(t, index, key); pending || !held {
			t.Errorf("send %d: key not bound (held %v)", i, held)
		}
	}
	if got := odd.count("SendStreamingMessage"); got != 1 {
		t.Errorf("the server got %d streaming forms; want 1 (then it is known not to stream)", got)
	}
	if got := odd.count("SendMessage"); got != 2 {
		t.Errorf("the server got %d unary sends; want 2", got)
	}
}

// Bug 2: a 502 of the hop in front of the server (the connection broke after the
// request was written, or the header timeout fired) does not release the key: the
// server may be running the agent. A retry waits and gets 409; it does not run
// the send again.
func TestHopErrorKeepsKeyPending(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, c oddCall)
	}{
		{"cut", func(w http.ResponseWriter, c oddCall) { cut(w) }},
		{"header-timeout", func(w http.ResponseWriter, c oddCall) { time.Sleep(600 * time.Millisecond) }},
		{"504-of-a-hop", func(w http.ResponseWriter, c oddCall) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusGatewayTimeout)
			w.Write([]byte("<html>gateway timeout</html>"))
		}},
		{"500", func(w http.ResponseWriter, c oddCall) { http.Error(w, "boom", http.StatusInternalServerError) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) { tc.answer(w, c) }}
			index := newIndex()
			front := oddFront(t, index, quietOptions(), behindProxy(t, odd, 300*time.Millisecond))
			key := idempotency.NewKey()
			postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
			if pending, held := pendingIn(t, index, key); !pending {
				t.Fatalf("after a %s the key is not pending (held %v); a retry would run the send again", tc.name, held)
			}
			status, h, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
			if status != http.StatusConflict || h.Get("Retry-After") == "" {
				t.Errorf("retry: %d %s; want 409 with Retry-After", status, body)
			}
			if n := odd.sends(); n != 1 {
				t.Errorf("the send reached the server %d times; want once", n)
			}
		})
	}
}

// A definite refusal by the server itself, in the binding's shape, releases the key,
// also when the client left before the refusal came (SPEC §8: a send the server
// refused holds no key).
func TestRefusalReleasesEvenWhenClientLeft(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, c oddCall)
	}{
		{"jsonrpc-invalid-params", func(w http.ResponseWriter, c oddCall) { rpcErr(w, c, -32602, "parts must not be empty") }},
		{"jsonrpc-task-not-found", func(w http.ResponseWriter, c oddCall) { rpcErr(w, c, -32001, "task not found") }},
	} {
		for _, left := range []bool{false, true} {
			name := tc.name
			if left {
				name += "/client-left"
			}
			t.Run(name, func(t *testing.T) {
				answered := make(chan struct{})
				odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
					time.Sleep(150 * time.Millisecond)
					tc.answer(w, c)
					close(answered)
				}}
				index := newIndex()
				front := oddFront(t, index, quietOptions(), behindProxy(t, odd, 0))
				key := idempotency.NewKey()
				ctx, cancel := context.WithCancel(context.Background())
				if left {
					time.AfterFunc(30*time.Millisecond, cancel)
				}
				postTo(t, ctx, front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
				cancel()
				<-answered
				deadline := time.Now().Add(2 * time.Second)
				for {
					_, held := pendingIn(t, index, key)
					if !held {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the server refused the send, but its key is still held")
					}
					time.Sleep(10 * time.Millisecond)
				}
			})
		}
	}
}

// Bug 4: a Message reply past idempotency.MaxReplyLength cannot be stored; the key is
// bound to a marker, so that a retry gets a defined answer (it cannot be replayed),
// never 409 for the lease and never a second run, also after the lease.
func TestReplyPastBoundIsNotRerun(t *testing.T) {
	big := strings.Repeat("x", idempotency.MaxReplyLength+10)
	odd := &oddServer{answer: func(w http.ResponseWriter, r *http.Request, c oddCall) {
		rpcResult(w, c, `{"message":{"messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"`+big+`"}]}}`)
	}}
	index := newIndex()
	opts := quietOptions()
	opts.Lease = 300 * time.Millisecond
	front := oddFront(t, index, opts, odd)
	key := idempotency.NewKey()
	status, _, _ := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
	if status != http.StatusOK {
		t.Fatalf("first send: %d", status)
	}
	for _, wait := range []time.Duration{0, 400 * time.Millisecond} {
		time.Sleep(wait)
		status, header, body := postTo(t, context.Background(), front.URL+"/", keyedCall(t, "SendMessage", key, "m-1", "hi"))
		if status == http.StatusConflict || errorCode(body) == 0 || !strings.Contains(string(body), "cannot be replayed") {
			t.Errorf("retry after %v: %d %.300s; want a defined answer saying the reply cannot be replayed", wait, status, body)
		}
		if header.Get(idempotency.ReplayedHeader) != "true" || !strings.Contains(string(body), middleware.ReasonUnreplayable) {
			t.Errorf("retry after %v: %s %q, reason %s; want the answer served from the first attempt marked, with the kit's reason",
				wait, idempotency.ReplayedHeader, header.Get(idempotency.ReplayedHeader), middleware.ReasonUnreplayable)
		}
	}
	if n := odd.sends(); n != 1 {
		t.Errorf("the send reached the server %d times; want once", n)
	}
}
