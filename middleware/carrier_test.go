package middleware_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/middleware"
)

// The Idempotency-Key request header is the key's second carrier on the HTTP
// bindings: honoured alone; with the metadata key too, the two must be equal, or the
// send is refused as malformed, as a malformed key is; checked like the metadata key.
// The server behind gets the body exactly as the client sent it.
func TestKeyHeaderCarrier(t *testing.T) {
	for _, b := range wireclient.Bindings {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", b, streaming), func(t *testing.T) {
				h := mwtest.New(t, mwtest.Config{Record: true})
				c := &wireclient.Client{BaseURL: h.Server.URL, HTTP: h.HTTP}
				do := func(id, metaKey string, header ...string) wireclient.Answer {
					t.Helper()
					s := wireclient.Send{Binding: b, Streaming: streaming, MessageID: id, Key: metaKey, KeyHeader: header, Text: "echo " + id}
					a, err := c.Do(context.Background(), s)
					if err != nil {
						t.Fatalf("send: %v", err)
					}
					return a
				}
				served := func(a wireclient.Answer, replayed bool) string {
					t.Helper()
					if a.Kind != wireclient.Task || !a.Extension || a.Replayed != replayed {
						t.Fatalf("answer %v (extension %v, replayed %v), want a task, replayed %v", a, a.Extension, a.Replayed, replayed)
					}
					return a.TaskID
				}
				refused := func(a wireclient.Answer, text string) {
					t.Helper()
					if a.Kind != wireclient.Refused || a.KitReason != middleware.ReasonInvalid || a.Replayed ||
						!strings.Contains(a.ErrMessage, text) {
						t.Fatalf("answer %v (kit reason %q), want a refusal as malformed saying %q", a, a.KitReason, text)
					}
					wantCode, wantStatus := -32602, 200
					if b == wireclient.HTTPJSON {
						wantCode, wantStatus = 400, 400
					}
					if a.Code != wantCode || a.Status != wantStatus {
						t.Fatalf("answer %v, want code %d, HTTP %d", a, wantCode, wantStatus)
					}
					sse := strings.HasPrefix(a.Header.Get("Content-Type"), "text/event-stream")
					if want := b == wireclient.JSONRPC && streaming; sse != want {
						t.Fatalf("the refusal is SSE-framed: %v, want %v", sse, want)
					}
				}

				// The header alone: runs once; a retry with the header alone, and one with
				// the key in the metadata alone, reach the same claim.
				key, id := idempotency.NewKey(), idempotency.NewKey()
				task := served(do(id, "", key), false)
				if got := served(do(id, "", `"`+key+`"`), true); got != task {
					t.Fatalf("header-only retry: task %s, want %s", got, task)
				}
				if got := served(do(id, key), true); got != task {
					t.Fatalf("metadata retry of a header-keyed send: task %s, want %s", got, task)
				}
				// A header-only retry of a metadata-keyed send reaches the same claim.
				key2, id2 := idempotency.NewKey(), idempotency.NewKey()
				task2 := served(do(id2, key2), false)
				if got := served(do(id2, "", key2), true); got != task2 {
					t.Fatalf("header-only retry of a metadata-keyed send: task %s, want %s", got, task2)
				}
				// Both carriers, agreeing.
				key3, id3 := idempotency.NewKey(), idempotency.NewKey()
				task3 := served(do(id3, key3, key3), false)
				if got := served(do(id3, key3, key3), true); got != task3 {
					t.Fatalf("retry with both carriers: task %s, want %s", got, task3)
				}
				for _, m := range []string{id, id2, id3} {
					if n := h.Agent.RunsOf(m); n != 1 {
						t.Fatalf("message %s ran %d times, want 1", m, n)
					}
				}

				// Refusals: nothing runs.
				bad := idempotency.NewKey()
				refused(do(bad, idempotency.NewKey(), idempotency.NewKey()), "carry different idempotency keys")
				refused(do(bad, "", "short"), "Idempotency-Key header: idempotency key is too short")
				refused(do(bad, "", key+"/x"), "invalid character")
				refused(do(bad, "", key, key), "header is repeated")
				refused(do(bad, key, "short"), "Idempotency-Key header: idempotency key is too short")
				if n := h.Agent.RunsOf(bad); n != 0 {
					t.Fatalf("refused sends ran %d times", n)
				}

				// The body the server got is the one the client sent.
				body := wireclient.Send{Binding: b, Streaming: streaming, MessageID: id, Text: "echo " + id}.Body()
				found := false
				for _, x := range h.Received.Exchanges() {
					if bytes.Contains(x.ReqBody, []byte(id)) {
						found = true
						if !bytes.Equal(x.ReqBody, body) {
							t.Fatalf("the server got %s, want the client's %s", x.ReqBody, body)
						}
						break
					}
				}
				if !found {
					t.Fatal("the header-keyed send did not reach the server")
				}
			})
		}
	}
}
