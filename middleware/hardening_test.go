package middleware_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// These tests attack the middleware as a hostile or careless client would (issue 14).
// They need no A2A server: each answer under test is the middleware's own, or the
// wrapped handler is the thing under attack (an upload route).

// hardMessage returns a JSON message object with key and id (and, when set, taskId).
func hardMessage(key, id, taskID string) map[string]any {
	m := map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hi"}},
		"metadata": map[string]any{idempotency.MetadataKey: key}}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return m
}

// rpcBody is a JSON-RPC SendMessage of msg in tenant.
func rpcBody(t *testing.T, tenant string, msg map[string]any) []byte {
	t.Helper()
	params := map[string]any{"message": msg}
	if tenant != "" {
		params["tenant"] = tenant
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// restBody is an HTTP+JSON SendMessage body of msg in tenant.
func restBody(t *testing.T, tenant string, msg map[string]any) []byte {
	t.Helper()
	req := map[string]any{"message": msg}
	if tenant != "" {
		req["tenant"] = tenant
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unreachable is a wrapped handler that fails the test when a request reaches it.
func unreachable(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("%s %s reached the wrapped handler", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
}

func wrap(t *testing.T, index idempotency.KeyIndex, opts middleware.Options, next http.Handler) http.Handler {
	t.Helper()
	mw, err := middleware.New(index, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mw(next)
}

func post(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// rpcError returns the JSON-RPC error code of a recorded answer, or 0.
func rpcError(t *testing.T, w *httptest.ResponseRecorder) (int, string) {
	t.Helper()
	body := w.Body.Bytes()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body = body[i+len("data: "):]
	}
	var resp struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&resp); err != nil || resp.Error == nil {
		return 0, ""
	}
	return resp.Error.Code, resp.Error.Message
}

// oneByte is a request body that announces much more than it delivers: one byte, then
// the end of the stream, as a client that sent headers and stalled.
type oneByte struct{ sent bool }

func (b *oneByte) Read(p []byte) (int, error) {
	if b.sent {
		return 0, io.ErrUnexpectedEOF
	}
	b.sent = true
	p[0] = '{'
	return 1, nil
}

// Item 1: a body that announces 10 MiB and sends one byte costs what it sent, not
// what it announced.
func TestAnnouncedLengthNotAllocated(t *testing.T) {
	h := wrap(t, memstore.New(memstore.Options{}), middleware.Options{Logger: slog.New(slog.DiscardHandler)}, http.NotFoundHandler())
	var least uint64 = 1 << 62
	for range 5 {
		r := httptest.NewRequest(http.MethodPost, "/anything", &oneByte{})
		r.ContentLength = middleware.DefaultMaxBodyBytes
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h.ServeHTTP(httptest.NewRecorder(), r)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	if least > 256<<10 {
		t.Errorf("a request announcing %d bytes and sending 1 allocated %d bytes", middleware.DefaultMaxBodyBytes, least)
	}
}
