package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// oddServer is a minimal JSON-RPC A2A server that is not a2a-go: each test scripts
// its answers (late, cut, JSON to a streaming request, pretty-printed, refusing), and
// it records every call it got, so that a test counts how often a send reached it.
type oddServer struct {
	answer func(w http.ResponseWriter, r *http.Request, c oddCall)

	mu    sync.Mutex
	calls []oddCall
}

// oddCall is one request the oddServer got.
type oddCall struct {
	Method string
	Path   string
	Body   []byte
	ID     json.RawMessage
}

func (o *oddServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var call struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &call)
	c := oddCall{Method: call.Method, Path: r.URL.Path, Body: body, ID: call.ID}
	if c.Method == "" {
		c.Method = r.Method + " " + r.URL.Path
	}
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
	o.answer(w, r, c)
}

// count returns how many calls of method (a JSON-RPC method, or "GET /path" for
// another request) the server got.
func (o *oddServer) count(method string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// sends returns how many sends (unary or streaming) reached the server.
func (o *oddServer) sends() int { return o.count("SendMessage") + o.count("SendStreamingMessage") }

// last returns the last call of method.
func (o *oddServer) last(method string) (oddCall, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.calls) - 1; i >= 0; i-- {
		if o.calls[i].Method == method {
			return o.calls[i], true
		}
	}
	return oddCall{}, false
}

// rpcResult writes a JSON-RPC result answering c.
func rpcResult(w http.ResponseWriter, c oddCall, result string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(idOr(c.ID))+`,"result":`+result+"}\n")
}

// rpcErr writes a JSON-RPC error answering c.
func rpcErr(w http.ResponseWriter, c oddCall, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	e, _ := json.Marshal(map[string]any{"code": code, "message": msg})
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(idOr(c.ID))+`,"error":`+string(e)+"}\n")
}

func idOr(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// sseStart starts a Server-Sent Events answer.
func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	http.NewResponseController(w).Flush()
}

// sseResult writes one event carrying a JSON-RPC result answering c.
func sseResult(w http.ResponseWriter, c oddCall, result string) {
	io.WriteString(w, `data: {"jsonrpc":"2.0","id":`+string(idOr(c.ID))+`,"result":`+result+"}\n\n")
	http.NewResponseController(w).Flush()
}

// cut hijacks the connection and closes it: the answer never comes.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// taskJSON is a v1.0 Task in state.
func taskJSON(id, state string) string {
	return `{"id":"` + id + `","contextId":"ctx-` + id + `","status":{"state":"` + state + `"}}`
}

// keyedCall is a keyed JSON-RPC call of method (SendMessage or SendStreamingMessage)
// with message id and text.
func keyedCall(t *testing.T, method, key, id, text string) []byte {
	t.Helper()
	msg := map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}},
		"metadata": map[string]any{idempotency.MetadataKey: key}}
	return marshal(t, map[string]any{"jsonrpc": "2.0", "id": "1", "method": method, "params": map[string]any{"message": msg}})
}

// oddFront is the middleware over index in front of next, served over TCP by a
// net/http server (so that requests carry what net/http puts in their context).
func oddFront(t *testing.T, index idempotency.KeyIndex, opts middleware.Options, next http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(wrap(t, index, opts, next))
	t.Cleanup(srv.Close)
	return srv
}

// behindProxy serves h over TCP and returns an httputil.ReverseProxy to it, as the
// sidecar forwards: the proxy answers 502 when the connection breaks.
func behindProxy(t *testing.T, h http.Handler, headerTimeout time.Duration) http.Handler {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	target, _ := url.Parse(up.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = headerTimeout
	t.Cleanup(tr.CloseIdleConnections)
	return &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, FlushInterval: -1,
		Transport: tr, ErrorLog: nil}
}

// postTo posts body to url and returns the status and the answer's body.
func postTo(t *testing.T, ctx context.Context, u string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// errorCode returns the JSON-RPC error code of an answer (a plain body or one event),
// or 0.
func errorCode(body []byte) int {
	if i := bytes.Index(body, []byte("data:")); i >= 0 {
		body = bytes.TrimPrefix(body[i+len("data:"):], []byte(" "))
	}
	var resp struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&resp) != nil || resp.Error == nil {
		return 0
	}
	return resp.Error.Code
}

// pendingIn reports whether key is held pending in index (in the empty scope), and
// whether it is held at all.
func pendingIn(t *testing.T, index idempotency.KeyIndex, key string) (pending, held bool) {
	t.Helper()
	rec, found, err := index.Lookup(context.Background(), "", key)
	if err != nil {
		t.Fatal(err)
	}
	return found && rec.Pending(), found
}

// quietOptions are middleware options with a short ReplayWait and no logs.
func quietOptions() middleware.Options {
	return middleware.Options{ReplayWait: 200 * time.Millisecond, Logger: quietLog}
}

// newIndex returns a fresh in-memory index.
func newIndex() *memstore.Store { return memstore.New(memstore.Options{}) }

// contains reports whether b contains any of subs.
func containsAny(b []byte, subs ...string) bool {
	for _, s := range subs {
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// quietLog drops what the middleware logs.
var quietLog = slog.New(slog.DiscardHandler)
