package middleware

import (
	"net/http/httptest"
	"testing"
)

// route picks one cell of the dialect grid for every request, from its path and its
// body, whatever order the dialects are declared in.
// jsonrpc03 and rest03 return A2A v0.3's dialects (internal/v03), as registered.
func jsonrpc03() rpcDialect { return rpcSends["message/send"].d }
func rest03() dialect       { return restOthers[0] }

func TestRoute(t *testing.T) {
	const (
		key     = `"metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}`
		v1Msg   = `{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],` + key + `}`
		v03Msg  = `{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],` + key + `}`
		protoMs = `{"messageId":"m","role":"ROLE_USER","content":[{"text":"hi"}],` + key + `}`
	)
	rpc := func(method, msg string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":` + msg + `}}`
	}
	for _, tc := range []struct {
		name, path, body string
		want             dialect // nil: not a send
		streaming        bool
	}{
		{"v1.0 JSON-RPC send", "/", rpc("SendMessage", v1Msg), jsonrpc10{}, false},
		{"v1.0 JSON-RPC stream at any path", "/x/y", rpc("SendStreamingMessage", v1Msg), jsonrpc10{}, true},
		{"v0.3 JSON-RPC send", "/jsonrpc", rpc("message/send", v03Msg), jsonrpc03(), false},
		{"v0.3 JSON-RPC stream", "/", rpc("message/stream", v03Msg), jsonrpc03(), true},
		{"another JSON-RPC method", "/", rpc("GetTask", v1Msg), nil, false},
		{"a JSON-RPC call with params that do not decode", "/", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":5}`, nil, false},
		{"a JSON-RPC call of version 1.0", "/", `{"jsonrpc":"1.0","id":1,"method":"SendMessage","params":{}}`, nil, false},
		{"v1.0 HTTP+JSON send", "/message:send", `{"message":` + v1Msg + `}`, rest10{}, false},
		{"v1.0 HTTP+JSON stream under a tenant", "/t/acme/message:stream", `{"message":` + v1Msg + `}`, rest10{}, true},
		{"v0.3 HTTP+JSON send", "/v1/message:send", `{"message":` + protoMs + `}`, rest03(), false},
		{"v0.3 HTTP+JSON stream under a mount", "/api/v1/message:stream", `{"message":` + protoMs + `}`, rest03(), true},
		{"v1.0 HTTP+JSON under /v1 (no content)", "/v1/message:send", `{"message":` + v1Msg + `}`, rest10{}, false},
		{"v1.0 HTTP+JSON with content outside /v1", "/message:send", `{"message":` + protoMs + `}`, rest10{}, false},
		{"an HTTP+JSON body that does not decode", "/message:send", `[1]`, nil, false},
		// A JSON-RPC handler mounted on a catch-all path (as a2a-go's CLI and TCK
		// servers mount it) runs a JSON-RPC call sent to any path, an HTTP+JSON one
		// included: a keyed call there is read as the JSON-RPC send it is.
		{"a keyed JSON-RPC body at an HTTP+JSON path", "/x/message:send", rpc("SendMessage", v1Msg), jsonrpc10{}, false},
		{"a keyed JSON-RPC stream at an HTTP+JSON path", "/message:stream", rpc("SendStreamingMessage", v1Msg), jsonrpc10{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := route(httptest.NewRequest("POST", tc.path, nil), []byte(tc.body))
			switch {
			case s != nil && s.ambiguous:
				t.Fatalf("read as ambiguous")
			case tc.want == nil && s != nil:
				t.Fatalf("read as a send of %s %s", s.d.framing(), s.d.version())
			case tc.want == nil:
			case s == nil:
				t.Fatalf("not read as a send; want %s %s", tc.want.framing(), tc.want.version())
			case s.d != tc.want || s.streaming != tc.streaming:
				t.Fatalf("read as %s %s (streaming %v), want %s %s (streaming %v)", s.d.framing(), s.d.version(),
					s.streaming, tc.want.framing(), tc.want.version(), tc.streaming)
			}
		})
	}
}

// A body that both bindings read as a send with a message, one of them keyed, is
// ambiguous: which one runs depends on what is mounted behind, so it is refused.
func TestRouteRefusesDisagreeingReadings(t *testing.T) {
	const (
		keyed   = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}}`
		unkeyed = `{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	)
	for name, body := range map[string]string{
		"REST keyed, JSON-RPC unkeyed": `{"message":` + keyed + `,"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + unkeyed + `}}`,
		"REST unkeyed, JSON-RPC keyed": `{"message":` + unkeyed + `,"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + keyed + `}}`,
		"both keyed":                   `{"message":` + keyed + `,"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + keyed + `}}`,
	} {
		s := route(httptest.NewRequest("POST", "/message:send", nil), []byte(body))
		if s == nil || !s.ambiguous || !s.keyed {
			t.Errorf("%s: read as %+v, want an ambiguous keyed send", name, s)
		}
	}
}

// framingOf answers an unreadable body in the framing its path implies.
func TestFramingOf(t *testing.T) {
	for path, want := range map[string]dialect{
		"/":                      jsonrpc10{},
		"/jsonrpc":               jsonrpc10{},
		"/message:send":          rest10{},
		"/t/acme/message:send":   rest10{},
		"/v1/message:stream":     rest03(),
		"/api/v1/message:send":   rest03(),
		"/v1/tasks/t1:subscribe": jsonrpc10{},
	} {
		if got := framingOf(httptest.NewRequest("POST", path, nil)); got != want {
			t.Errorf("framingOf(%s) = %s %s, want %s %s", path, got.framing(), got.version(), want.framing(), want.version())
		}
	}
}
