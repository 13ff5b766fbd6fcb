package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

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

// sendRequest is the SendMessage request of msg in tenant: the HTTP+JSON body, and
// the params of a JSON-RPC call.
func sendRequest(tenant string, msg map[string]any) map[string]any {
	req := map[string]any{"message": msg}
	if tenant != "" {
		req["tenant"] = tenant
	}
	return req
}

// rpcBody is a JSON-RPC SendMessage of msg in tenant.
func rpcBody(t *testing.T, tenant string, msg map[string]any) []byte {
	t.Helper()
	return marshal(t, map[string]any{"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": sendRequest(tenant, msg)})
}

// restBody is an HTTP+JSON SendMessage body of msg in tenant.
func restBody(t *testing.T, tenant string, msg map[string]any) []byte {
	t.Helper()
	return marshal(t, sendRequest(tenant, msg))
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
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

// Item 5: input the index cannot take is a client error, not a 503 to retry: a tenant
// or message id past the bounds is refused before anything is claimed, and a full
// scope answers 429 RESOURCE_EXHAUSTED with a Retry-After that keyedclient does not
// retry.
func TestClientErrorsNotTransient(t *testing.T) {
	ctx := context.Background()
	index := memstore.New(memstore.Options{MaxKeysPerScope: 1})
	if _, err := index.Claim(ctx, "full", idempotency.NewKey(), "m0", time.Minute); err != nil {
		t.Fatal(err)
	}
	h := wrap(t, index, middleware.Options{Logger: slog.New(slog.DiscardHandler)}, unreachable(t))
	long := strings.Repeat("t", idempotency.MaxScopeLength+1)
	longID := strings.Repeat("m", idempotency.MaxMessageIDLength+1)
	for name, tc := range map[string]struct {
		tenant, id string
		status     int    // HTTP+JSON status
		code       int    // JSON-RPC code; 0 when the answer has a status of its own
		grpc       string // HTTP+JSON status name
	}{
		"long tenant":     {tenant: long, id: "m1", status: 400, code: -32602, grpc: "INVALID_ARGUMENT"},
		"long message id": {id: longID, status: 400, code: -32602, grpc: "INVALID_ARGUMENT"},
		"full scope":      {tenant: "full", id: "m1", status: 429, grpc: "RESOURCE_EXHAUSTED"},
	} {
		key := idempotency.NewKey()
		w := post(h, "/jsonrpc", rpcBody(t, tc.tenant, hardMessage(key, tc.id, "")))
		code, _ := rpcError(t, w)
		switch {
		case tc.code != 0 && (w.Code != 200 || code != tc.code):
			t.Errorf("%s, JSON-RPC: HTTP %d code %d, want 200 with %d", name, w.Code, code, tc.code)
		case tc.code == 0 && w.Code != tc.status:
			t.Errorf("%s, JSON-RPC: HTTP %d, want %d", name, w.Code, tc.status)
		}
		w = post(h, "/message:send", restBody(t, tc.tenant, hardMessage(key, tc.id, "")))
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.grpc) {
			t.Errorf("%s, HTTP+JSON: %d %s, want %d %s", name, w.Code, w.Body.String(), tc.status, tc.grpc)
		}
		if tc.status == 429 && w.Header().Get("Retry-After") != "3600" {
			t.Errorf("%s: Retry-After %q, want 3600", name, w.Header().Get("Retry-After"))
		}
		if len(w.Body.Bytes()) > 2048 {
			t.Errorf("%s: the answer is %d bytes: it repeats the client's value", name, w.Body.Len())
		}
	}
	if c, _ := index.Capacity(ctx, long[:idempotency.MaxScopeLength]); c.Held != 0 {
		t.Errorf("a refused send left %d keys", c.Held)
	}
}

// refusingIndex refuses every claim as invalid input, as sqlstore refuses a message id
// with a NUL byte on PostgreSQL, with text that names the database.
type refusingIndex struct{ idempotency.KeyIndex }

func (refusingIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	return idempotency.Claim{}, fmt.Errorf("sqlstore: claim on db-7.internal: %w: message id is not UTF-8 text without NUL bytes", idempotency.ErrInvalidArgument)
}

// Item 5: input the index itself refuses is a client error too, and its text stays
// in the log.
func TestIndexRefusalIsClientError(t *testing.T) {
	h := wrap(t, refusingIndex{memstore.New(memstore.Options{})}, middleware.Options{Logger: slog.New(slog.DiscardHandler)}, unreachable(t))
	key := idempotency.NewKey()
	w := post(h, "/jsonrpc", rpcBody(t, "", hardMessage(key, "m\x00", "")))
	if code, msg := rpcError(t, w); w.Code != 200 || code != -32602 || strings.Contains(msg, "db-7") {
		t.Errorf("JSON-RPC: HTTP %d code %d %q, want 200 with -32602 and no index text", w.Code, code, msg)
	}
	w = post(h, "/message:send", restBody(t, "", hardMessage(key, "m\x00", "")))
	if w.Code != 400 || !strings.Contains(w.Body.String(), "INVALID_ARGUMENT") || strings.Contains(w.Body.String(), "db-7") {
		t.Errorf("HTTP+JSON: %d %s, want 400 INVALID_ARGUMENT and no index text", w.Code, w.Body.String())
	}
}

// leakyTasks is a TaskSource whose failures describe its database.
type leakyTasks struct{ err error }

func (l leakyTasks) ReadTask(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error) {
	return nil, l.err
}

// Item 6: what Options.Tasks fails with goes to the log, never into the client's
// answer.
func TestTaskSourceErrorsStayInLog(t *testing.T) {
	const secret = `pq: password authentication failed for user "app" (host db-7.internal): SELECT task FROM tasks`
	ctx := context.Background()
	for name, err := range map[string]error{
		"store down": errors.New(secret),
		"not found":  fmt.Errorf("%w: %s", middleware.ErrTaskNotFound, secret),
	} {
		index := memstore.New(memstore.Options{})
		key := idempotency.NewKey()
		c, cerr := index.Claim(ctx, "", key, "m1", time.Minute)
		if cerr != nil {
			t.Fatal(cerr)
		}
		if err := index.Bind(ctx, "", key, c.Token, idempotency.Binding{TaskID: "task-1"}); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		h := wrap(t, index, middleware.Options{Tasks: leakyTasks{err}, ReplayWait: -1,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))}, http.NotFoundHandler())
		for _, w := range []*httptest.ResponseRecorder{
			post(h, "/jsonrpc", rpcBody(t, "", hardMessage(key, "m1", ""))),
			post(h, "/message:send", restBody(t, "", hardMessage(key, "m1", ""))),
		} {
			if strings.Contains(w.Body.String(), "db-7") || strings.Contains(w.Body.String(), "SELECT") {
				t.Errorf("%s: the client's answer carries the store's text: %s", name, w.Body.String())
			}
		}
		if name == "store down" && !strings.Contains(logs.String(), "db-7") {
			t.Errorf("%s: the store's error is not in the log:\n%s", name, logs.String())
		}
	}
}

// Item 7: a client-chosen value is logged shortened, however long it is.
func TestLogsShortenClientValues(t *testing.T) {
	ctx := context.Background()
	tenant := strings.Repeat("t", idempotency.MaxScopeLength)
	index := memstore.New(memstore.Options{})
	key := idempotency.NewKey()
	if _, err := index.Claim(ctx, tenant, key, "m1", time.Minute); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	h := wrap(t, index, middleware.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}, unreachable(t))
	for range 5 {
		post(h, "/jsonrpc", rpcBody(t, tenant, hardMessage(key, "m2", ""))) // key reused: a conflict
		post(h, "/jsonrpc", rpcBody(t, strings.Repeat("x", 4<<20), hardMessage(key, "m2", "")))
	}
	if logs.Len() > 4<<10 {
		t.Errorf("ten refused sends wrote %d bytes of log", logs.Len())
	}
}

// Item 7: when the client leaves before anything bound its key, the log says what is
// known, not that the key stays pending until its lease ends: code behind the
// middleware (the adapter) may bind it a moment later, as here.
func TestLogSaysWhatIsKnownWhenClientLeaves(t *testing.T) {
	var logs bytes.Buffer
	bound := make(chan error, 1)
	left := make(chan struct{})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs, ok := middleware.ClaimedSendFrom(r.Context())
		if !ok {
			t.Error("no claim in the forwarded request's context")
			return
		}
		<-left // the client left; the agent starts in the background
		go func() {
			time.Sleep(10 * time.Millisecond)
			bound <- cs.Bind(context.Background(), idempotency.Binding{TaskID: "task-1"})
		}()
		w.WriteHeader(http.StatusInternalServerError)
	})
	h := wrap(t, memstore.New(memstore.Options{}), middleware.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, next)
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/jsonrpc", bytes.NewReader(rpcBody(t, "", hardMessage(idempotency.NewKey(), "m1", ""))))
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
		close(left)
	}()
	h.ServeHTTP(httptest.NewRecorder(), r)
	if err := <-bound; err != nil {
		t.Fatalf("the code behind could not bind the key: %v", err)
	}
	if strings.Contains(logs.String(), "stays pending until its lease ends") {
		t.Errorf("the log says the key stays pending until its lease ends, and it was bound a moment later:\n%s", logs.String())
	}
}

// Item 10: a tenant template of several segments gives each tenant its own scope.
func TestTenantRoutesTemplates(t *testing.T) {
	routes, err := middleware.NewTenantRoutes("/locations/*/projects/{*}")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/locations/eu/projects/alpha/message:send": "alpha",
		"/locations/us/projects/beta/message:send":  "beta",
	} {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		if got, err := routes.Scope(r, ""); err != nil || got != want {
			t.Errorf("%s: scope %q, %v; want %q", path, got, err, want)
		}
	}
	multi, err := middleware.NewTenantRoutes("/{locations/*/projects/*}")
	if err != nil {
		t.Fatal(err)
	}
	a := httptest.NewRequest(http.MethodPost, "/locations/eu/projects/alpha/message:send", nil)
	b := httptest.NewRequest(http.MethodPost, "/locations/eu/projects/beta/message:send", nil)
	sa, _ := multi.Scope(a, "")
	sb, _ := multi.Scope(b, "")
	if sa == sb || sa != "locations/eu/projects/alpha" {
		t.Errorf("multi-segment tenants scope as %q and %q, want locations/eu/projects/alpha and another", sa, sb)
	}
	for _, bad := range []string{"/tenants/{*}/{*}", "/tenants/{*", "/tenants", "/tenants/{}"} {
		if _, err := middleware.NewTenantRoutes(bad); err == nil {
			t.Errorf("NewTenantRoutes(%q) accepted a malformed template", bad)
		}
	}
}

// chunked is a request body that a test feeds piece by piece.
type chunked struct {
	pieces chan []byte
	left   []byte
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.left) == 0 {
		b, ok := <-c.pieces
		if !ok {
			return 0, io.EOF
		}
		c.left = b
	}
	n := copy(p, c.left)
	c.left = c.left[n:]
	return n, nil
}

// Item 8: a non-A2A upload passes through untouched: no 413 past MaxBodyBytes, and
// the handler reads it as it arrives (its first bytes before the last are sent).
func TestUploadsPassUntouched(t *testing.T) {
	gotFirst := make(chan struct{})
	upload := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := make([]byte, 4)
		if _, err := io.ReadFull(r.Body, first); err != nil {
			t.Errorf("reading the upload's first bytes: %v", err)
			return
		}
		close(gotFirst)
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n+4)
	})
	h := wrap(t, memstore.New(memstore.Options{}), middleware.Options{MaxBodyBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)}, upload)

	body := &chunked{pieces: make(chan []byte)}
	r := httptest.NewRequest(http.MethodPost, "/upload", body)
	r.Header.Set("Content-Type", "application/octet-stream")
	w := httptest.NewRecorder()
	served := make(chan struct{})
	go func() {
		h.ServeHTTP(w, r)
		close(served)
	}()
	body.pieces <- []byte("\x89PNG")
	select {
	case <-gotFirst:
	case <-time.After(10 * time.Second):
		t.Fatal("the upload handler did not see the first bytes before the body ended")
	}
	chunk := bytes.Repeat([]byte{0xff}, 1<<20)
	for range 3 {
		body.pieces <- chunk
	}
	close(body.pieces)
	<-served
	if w.Code != http.StatusOK || w.Body.String() != fmt.Sprint(4+3<<20) {
		t.Errorf("upload answered %d %q, want 200 and the whole body read", w.Code, w.Body.String())
	}
}

// Item 8: Options.Reads keeps the middleware off routes that are not A2A: a large JSON
// body there reaches the handler untouched, while on an A2A route it is limited.
func TestReadsLimitsTheRoutesRead(t *testing.T) {
	big := append([]byte(`{"data":"`), bytes.Repeat([]byte("x"), 2<<20)...)
	big = append(big, `"}`...)
	echoLen := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	})
	opts := middleware.Options{MaxBodyBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler),
		Reads: func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/import/") }}
	h := wrap(t, memstore.New(memstore.Options{}), opts, echoLen)
	if w := post(h, "/import/records", big); w.Code != http.StatusOK || w.Body.String() != fmt.Sprint(len(big)) {
		t.Errorf("JSON upload on a route the middleware does not read: %d %q, want 200 and the whole body", w.Code, w.Body.String())
	}
	if w := post(h, "/jsonrpc", big); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("JSON body over MaxBodyBytes on an A2A route: %d, want 413", w.Code)
	}
}
