package middleware_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/middleware"
)

// TestCallersOwnTheirKeys03: keys bound to callers (adapter.Principal over the
// server's own authentication) on A2A v0.3's JSON-RPC and HTTP+JSON: another
// caller's retry of a caller's key and message gets "already held", never the task
// or Message reply; the caller's own retry is replayed; the agent ran once.
func TestCallersOwnTheirKeys03(t *testing.T) {
	const user = "X-Test-User"
	for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
		for _, word := range []string{"echo", "reply"} {
			t.Run(binding+"/"+word, func(t *testing.T) {
				auth := testkit.UserAuth(user)
				h := newHarness(t, mwtest.Config{Auth: auth, Opts: middleware.Options{Principal: adapter.Principal(auth)}})
				id := "m03-" + idempotency.NewKey()
				msg := fmt.Sprintf(`{"kind":"message","messageId":%q,"role":"user","parts":[{"kind":"text","text":"%s secret"}],`+
					`"metadata":{%q:%q}}`, id, word, idempotency.MetadataKey, idempotency.NewKey())
				url, body := h.Server.URL+mwtest.JSONRPC03Path, `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":`+msg+`}}`
				if binding == "HTTP+JSON" { // v0.3's HTTP+JSON speaks the proto JSON mapping
					rest := fmt.Sprintf(`{"messageId":%q,"role":"ROLE_USER","content":[{"text":"%s secret"}],"metadata":{%q:%q}}`,
						id, word, idempotency.MetadataKey, idempotency.NewKey())
					url, body = h.Server.URL+"/v1/message:send", `{"message":`+rest+`}`
				}
				send := func(as string) (int, string) {
					req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(user, as)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					return resp.StatusCode, string(b)
				}
				// answer names what came back: the task's id, or the Message reply's id.
				answer := func(b string) string {
					var a struct {
						Result  struct{ ID, MessageID string } // JSON-RPC: the task or Message
						Task    struct{ ID string }            // HTTP+JSON: {"task"} or {"message"}
						Message struct{ MessageID string }
					}
					_ = json.Unmarshal([]byte(b), &a)
					return a.Result.ID + a.Result.MessageID + a.Task.ID + a.Message.MessageID
				}
				code, first := send("alice")
				if code != http.StatusOK || answer(first) == "" {
					t.Fatalf("alice's send: %d %s", code, first)
				}
				if code, got := send("mallory"); !strings.Contains(got, "already held") || strings.Contains(got, "secret") ||
					strings.Contains(got, answer(first)) {
					t.Fatalf("mallory's retry of alice's key: %d %s; want the already-held refusal", code, got)
				}
				if code, again := send("alice"); code != http.StatusOK || answer(again) != answer(first) {
					t.Fatalf("alice's retry: %d %s; want %s", code, again, answer(first))
				}
				if n := h.Agent.RunsOf(id); n != 1 {
					t.Fatalf("the agent ran %d times, want 1", n)
				}
			})
		}
	}
}
