package middleware

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// routeUnfiltered is route as it was before the pre-filter: the JSON-RPC reading
// of a body at an HTTP+JSON path always decoded.
func routeUnfiltered(path string, body []byte) *send {
	r := httptest.NewRequest("POST", path, nil)
	prefix, streaming, isREST := restSend(r)
	rpc := readRPC(body)
	if !isREST {
		return rpc
	}
	rest := readREST(prefix, streaming, body)
	switch {
	case rpc == nil || !rpc.hasMessage:
		return rest
	case rest == nil || !rest.hasMessage:
		return rpc
	case rest.keyed || rpc.keyed:
		rest.keyed, rest.ambiguous = true, true
	}
	return rest
}

// methodSpellings are the ways a body can name the JSON-RPC method member that
// a2a-go's JSON-RPC handler (encoding/json, names matched case-insensitively after
// unquoting) reads as "method": every one must still reach the JSON-RPC reading.
var methodSpellings = []string{
	`"method"`,
	`"METHOD"`,
	`"Method"`,
	`"mEtHoD"`,
	`"\u006dethod"`,                          // an escaped first letter
	`"m\u0065thod"`,                          // an escaped inner letter
	`"metho\u0064"`,                          // an escaped last letter
	`"\u004D\u0045\u0054\u0048\u004F\u0044"`, // every letter escaped, upper case, upper-case hex
	`"\u006d\u0065\u0074\u0068\u006f\u0064"`,
	`"Met\u0048od"`,
}

// The catch-all guard's pre-filter skips the JSON-RPC reading of a body at an
// HTTP+JSON path only when that reading cannot find a send; whatever the spelling
// of the method member, the keyed JSON-RPC call is still read (and a body that
// both bindings read is still refused as ambiguous).
func TestRoutePrefilterKeepsEveryMethodSpelling(t *testing.T) {
	const (
		keyed   = `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}}`
		unkeyed = `{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	)
	for _, m := range methodSpellings {
		for name, tc := range map[string]struct {
			body      string
			ambiguous bool
		}{
			"keyed JSON-RPC call":                  {`{"jsonrpc":"2.0","id":1,` + m + `:"SendMessage","params":{"message":` + keyed + `}}`, false},
			"method after the params, white space": {`{"jsonrpc":"2.0","params":{"message":` + keyed + `},"id":"x", ` + m + " :\t\"SendStreamingMessage\"}", false},
			"v0.3 method":                          {`{"jsonrpc":"2.0","id":1,` + m + `:"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}}}}`, false},
			"duplicate method, the last a send":    {`{"jsonrpc":"2.0","id":1,"method":"GetTask",` + m + `:"SendMessage","params":{"message":` + keyed + `}}`, false},
			"REST unkeyed, JSON-RPC keyed":         {`{"message":` + unkeyed + `,"jsonrpc":"2.0","id":1,` + m + `:"SendMessage","params":{"message":` + keyed + `}}`, true},
			"REST keyed, JSON-RPC unkeyed":         {`{"message":` + keyed + `,"jsonrpc":"2.0","id":1,` + m + `:"SendMessage","params":{"message":` + unkeyed + `}}`, true},
		} {
			for _, path := range []string{"/message:send", "/t/acme/message:stream", "/v1/message:send"} {
				body := []byte(tc.body)
				s := route(httptest.NewRequest("POST", path, nil), body)
				if s == nil || !s.keyed || s.ambiguous != tc.ambiguous {
					t.Fatalf("%s with %s at %s: read as %+v, want keyed (ambiguous %v)", name, m, path, s, tc.ambiguous)
				}
				if want := routeUnfiltered(path, body); !reflect.DeepEqual(s, want) {
					t.Fatalf("%s with %s at %s: read as %+v, without the pre-filter %+v", name, m, path, s, want)
				}
			}
		}
	}
}

// A body with no method member in any spelling is an HTTP+JSON send, read once.
func TestRoutePrefilterSkipsBodiesWithoutMethod(t *testing.T) {
	for _, body := range []string{
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"the method is \"method\""}],"metadata":{"a2a-rust.com/idempotency-key":"k0123456789"}}}`,
		`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"k0123456789"}},"methods":"SendMessage","jsonrpc":"2.0","id":1}`,
	} {
		s := route(httptest.NewRequest("POST", "/message:send", nil), []byte(body))
		if want := routeUnfiltered("/message:send", []byte(body)); !reflect.DeepEqual(s, want) || s == nil || s.d != (rest10{}) {
			t.Errorf("%s: read as %+v, want the HTTP+JSON send %+v", body, s, want)
		}
	}
}

// FuzzRoutePrefilter holds route with its pre-filter to route without it, on every
// body at HTTP+JSON and JSON-RPC paths.
func FuzzRoutePrefilter(f *testing.F) {
	for _, m := range methodSpellings {
		f.Add(`{"jsonrpc":"2.0","id":1,` + m + `:"SendMessage","params":{"message":{"messageId":"m","metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}}}}`)
	}
	f.Add(`{"message":{"messageId":"m","metadata":{"a2a-rust.com/idempotency-key":"0123456789abcdef"}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Count(body, "{") > 64 {
			return
		}
		for _, path := range []string{"/message:send", "/v1/message:stream", "/jsonrpc"} {
			got := route(httptest.NewRequest("POST", path, nil), []byte(body))
			if want := routeUnfiltered(path, []byte(body)); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q at %s: read as %+v, without the pre-filter %+v", body, path, got, want)
			}
		}
	})
}
