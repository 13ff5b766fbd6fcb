package middleware_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/middleware"
)

// TestMessageFingerprint: the fingerprint ignores key order, white space, absent or
// empty members, the role's spelling, the message id, metadata and extensions, and
// changes with each of parts, role, contextId, taskId and referenceTaskIds.
func TestMessageFingerprint(t *testing.T) {
	fp := func(msg string) string {
		t.Helper()
		f, err := middleware.MessageFingerprint([]byte(msg))
		if err != nil {
			t.Fatalf("MessageFingerprint(%s): %v", msg, err)
		}
		if len(f) != 43 {
			t.Fatalf("fingerprint %q is %d bytes, want 43", f, len(f))
		}
		return f
	}
	base := fp(`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`)
	for _, same := range []string{
		`{ "referenceTaskIds" : [ "r" ], "taskId":"t","contextId":"c","parts":[{"metadata":{"n":1.0},"text":"hi"}],"role":"user","messageId":"other"}`,
		`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1},"mediaType":""}],"contextId":"c","taskId":"t","referenceTaskIds":["r"],"metadata":{"k":"v"},"extensions":["x"]}`,
		`{"MessageId":"m1","ROLE":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`,
		`{"kind":"message","role":"user","parts":[{"kind":"text","text":"hi","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`,
	} {
		if got := fp(same); got != base {
			t.Errorf("%s: fingerprint differs from the same content's", same)
		}
	}
	for _, other := range []string{
		`{"role":"ROLE_USER","parts":[{"text":"hi!","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`,
		`{"role":"ROLE_AGENT","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`,
		`{"role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"d","taskId":"t","referenceTaskIds":["r"]}`,
		`{"role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"c","referenceTaskIds":["r"]}`,
		`{"role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":1}}],"contextId":"c","taskId":"t","referenceTaskIds":["r","s"]}`,
		`{"role":"ROLE_USER","parts":[{"text":"hi","metadata":{"n":2}}],"contextId":"c","taskId":"t","referenceTaskIds":["r"]}`,
	} {
		if got := fp(other); got == base {
			t.Errorf("%s: fingerprint equals another content's", other)
		}
	}
	if _, err := middleware.MessageFingerprint([]byte(`[1]`)); err == nil {
		t.Error("a message that is not an object has a fingerprint")
	}
}

// TestCheckContent: with Options.CheckContent, a retry with the first attempt's key
// and message id but another message is refused as "already held" on both HTTP
// bindings, never replayed, and the agent ran once; the same message re-encoded
// (other key order, white space, role spelling, over the other binding) is replayed.
// Without it, the message id alone decides: the changed retry is replayed.
func TestCheckContent(t *testing.T) {
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("CheckContent=%v", check), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{CheckContent: check}})
			key := idempotency.NewKey()
			msg := func(role, text string) string {
				return `{"messageId":"m-content","role":"` + role + `","parts":[{"text":"` + text + `"}],` +
					`"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}`
			}
			post := func(binding, msg string) (int, string) {
				t.Helper()
				url, body := h.Server.URL+"/jsonrpc", `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":`+msg+`}}`
				if binding == "HTTP+JSON" {
					url, body = h.Server.URL+"/rest/message:send", `{ "message" : `+msg+` }`
				}
				res, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(b)
			}
			replayed := func(binding, m string) {
				t.Helper()
				if code, body := post(binding, m); code != http.StatusOK || !strings.Contains(body, `"task"`) {
					t.Fatalf("%s retry of the same message: %d %s; want its task", binding, code, body)
				}
			}
			replayed("JSONRPC", msg("ROLE_USER", "echo one"))
			replayed("HTTP+JSON", msg("ROLE_USER", "echo one"))
			replayed("JSONRPC", strings.ReplaceAll(`{"parts":[{"text":"echo one"}],"role":"ROLE_USER",`+
				`"metadata":{"`+idempotency.MetadataKey+`":"`+key+`"},"messageId":"m-content"}`, ",", " ,\n "))
			for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
				code, body := post(binding, msg("ROLE_USER", "echo two"))
				if !check {
					if code != http.StatusOK || !strings.Contains(body, `"task"`) {
						t.Fatalf("%s retry with other content, unchecked: %d %s; want the first task", binding, code, body)
					}
					continue
				}
				if !strings.Contains(body, "already held") || strings.Contains(body, "echo one") ||
					(binding == "HTTP+JSON") != (code == http.StatusBadRequest) {
					t.Fatalf("%s retry with other content: %d %s; want the already-held refusal", binding, code, body)
				}
			}
			h.ExpectRanOnce(t, "m-content")
		})
	}
}
