package middleware_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// WriteTooLarge answers as the middleware does for a JSON body over MaxBodyBytes, on
// both bindings.
func TestWriteTooLarge(t *testing.T) {
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{MaxBodyBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("a body over the limit was forwarded") }))
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + strings.Repeat("m", 100) + `"}}}`
	for _, path := range []string{"/", "/rpc", "/message:send", "/tenants/acme/message:stream", "/v1/message:send"} {
		want := httptest.NewRecorder()
		h.ServeHTTP(want, httptest.NewRequest(http.MethodPost, path, strings.NewReader(big)))
		got := httptest.NewRecorder()
		middleware.WriteTooLarge(got, httptest.NewRequest(http.MethodPost, path, strings.NewReader("[")), 64)
		if got.Code != http.StatusRequestEntityTooLarge || got.Code != want.Code || got.Body.String() != want.Body.String() ||
			got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%s: WriteTooLarge %d %q %s; the middleware %d %q %s", path, got.Code, got.Header().Get("Content-Type"),
				got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
		}
		var shape map[string]json.RawMessage
		if json.Unmarshal(got.Body.Bytes(), &shape) != nil || (shape["error"] == nil) {
			t.Errorf("%s: body %s is not an A2A error", path, got.Body)
		}
	}
}
