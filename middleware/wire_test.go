package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// Unkeyed traffic passes through untouched: the wrapped handler receives exactly the
// bytes the client sent, and the client receives exactly the bytes the wrapped
// handler wrote, through net/http's own ResponseWriter.
func TestUnkeyedTrafficIsUntouched(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{Record: true})
	ctx := context.Background()
	for _, m := range mwtest.Modes {
		c := h.Client(m.Dialect, "", "")
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo unkeyed"))
		msg.Metadata = map[string]any{"trace": "abc"}
		evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if _, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: mwtest.TaskOf(evs[0])}); err != nil {
			t.Fatalf("%s: GetTask: %v", m, err)
		}
	}
	// Bodies the middleware must parse to tell (escapes that could spell the key's
	// name) pass on untouched too, as do other methods and JSON that is no send.
	escaped := `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"esc-1","role":"ROLE_USER",` +
		`"parts":[{"text":"echo \u00e9\/"}],"metadata":{"a2a-rust.com\/other":"x"}}}}`
	raw := []struct{ method, path, body string }{
		{"POST", "/jsonrpc", escaped},
		{"POST", "/rest/message:send", `{"message":{"messageId":"esc-2","role":"ROLE_USER","parts":[{"text":"echo \/"}]}}`},
		{"POST", "/jsonrpc", `{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":"nope","metadata":{"` + idempotency.MetadataKey + `":1}}}`},
		{"POST", "/jsonrpc", `[{"jsonrpc":"2.0","id":9,"method":"SendMessage"}] ` + idempotency.MetadataKey},
		{"POST", "/jsonrpc", `not json ` + idempotency.MetadataKey},
		{"GET", "/rest/tasks/nope", ""},
		{"POST", mwtest.JSONRPC03Path, `{"jsonrpc":"2.0","id":10,"method":"message/send","params":{"message":{"kind":"message","messageId":"esc-3",` +
			`"role":"user","parts":[{"kind":"text","text":"echo \/"}],"metadata":{"a2a-rust.com\/other":"x"}}}}`},
		{"POST", mwtest.JSONRPC03Path, `{"jsonrpc":"2.0","id":11,"method":"tasks/get","params":{"id":"nope","metadata":{"` + idempotency.MetadataKey + `":1}}}`},
		{"POST", "/v1/message:send", `{"message":{"messageId":"esc-4","role":"ROLE_USER","content":[{"text":"echo \/"}]}}`},
		{"GET", "/v1/tasks/nope", ""},
	}
	for _, rq := range raw {
		req, _ := http.NewRequest(rq.method, h.Server.URL+rq.path, strings.NewReader(rq.body))
		resp, err := h.HTTP.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", rq.method, rq.path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	sent := h.Wire.Exchanges()
	got := h.Received.Exchanges()
	if len(sent) != len(got) || len(sent) != 2*len(mwtest.Modes)+len(raw) {
		t.Fatalf("client made %d requests, wrapped handler saw %d", len(sent), len(got))
	}
	for i := range sent {
		s, g := sent[i], got[i]
		if s.Method != g.Method || s.Path != g.Path || !bytes.Equal(s.ReqBody, g.ReqBody) {
			t.Fatalf("request %d: client sent %s %s %q, handler got %s %s %q", i, s.Method, s.Path, s.ReqBody, g.Method, g.Path, g.ReqBody)
		}
		if !bytes.Equal(s.RespBody.Bytes(), g.RespBody.Bytes()) {
			t.Fatalf("request %d (%s %s): client got %q, handler wrote %q", i, s.Method, s.Path, s.RespBody.Bytes(), g.RespBody.Bytes())
		}
		if g.Wrapped {
			t.Fatalf("request %d (%s %s): the wrapped handler got a wrapped ResponseWriter", i, s.Method, s.Path)
		}
		if s.Header.Get("A2A-Extensions") != "" {
			t.Fatalf("request %d: unkeyed answer carries A2A-Extensions", i)
		}
	}
	if len(h.Outcomes()) != 0 {
		t.Fatalf("observed %v for unkeyed traffic", h.Outcomes())
	}
}

// Every answer to a keyed send the middleware handled names the extension.
func TestKeyedAnswersCarryExtensionHeader(t *testing.T) {
	eachMode(t, mwtest.Config{}, func(t *testing.T, m mwtest.Mode, h *mwtest.Harness, c *a2aclient.Client) {
		ctx := context.Background()
		key := idempotency.NewKey()
		msg := mwtest.KeyedMessage(t, key, "echo header")
		mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})                                   // claimed
		mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})                                   // replayed
		mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: mwtest.KeyedMessage(t, key, "echo x")}) // conflict
		bad := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo bad"))
		bad.Metadata = map[string]any{idempotency.MetadataKey: "short"}
		mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: bad}) // refused
		xs := h.Wire.Exchanges()
		if len(xs) != 4 {
			t.Fatalf("%d exchanges", len(xs))
		}
		for i, x := range xs {
			if got := x.Header.Values("A2A-Extensions"); !slices.Equal(got, []string{idempotency.ExtensionURI}) {
				t.Fatalf("answer %d (%v): A2A-Extensions %q", i, h.Outcomes(), got)
			}
			// v0.3 names active extensions in X-A2A-Extensions.
			want := []string(nil)
			if m.Version == "0.3" {
				want = []string{idempotency.ExtensionURI}
			}
			if got := x.Header.Values("X-A2A-Extensions"); !slices.Equal(got, want) {
				t.Fatalf("answer %d (%v): X-A2A-Extensions %q, want %q", i, h.Outcomes(), got, want)
			}
		}
	})
}

// failingIndex returns an index that fails every call.
func failingIndex() idempotency.KeyIndex {
	ix := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
	ix.SetFailAll(true)
	return ix
}

func TestIndexFailureFailsClosed(t *testing.T) {
	for _, m := range mwtest.Modes {
		t.Run(m.String(), func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{Index: failingIndex()})
			c := h.Client(m.Dialect, "", "")
			ctx := context.Background()
			msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo must not run")
			evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
			if err == nil {
				t.Fatalf("keyed send with a failing index: %v, want an error", evs)
			}
			if m.Binding == "HTTP+JSON" && !errors.Is(err, a2a.ErrServerError) {
				t.Fatalf("error %v, want ErrServerError", err)
			}
			x := h.Wire.Last()
			if x.Status != http.StatusServiceUnavailable || x.Header.Get("Retry-After") != "1" {
				t.Fatalf("answer %d, Retry-After %q; want 503 with Retry-After", x.Status, x.Header.Get("Retry-After"))
			}
			body := x.RespBody.Bytes()
			if m.Binding == "JSONRPC" {
				// a2a-go's JSON-RPC client reports the status without reading the body.
				resp, b := httpDo(t, h.HTTP, "POST", h.Server.URL+x.Path, string(x.ReqBody), nil)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("raw retry: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				body = b
			}
			var e struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			}
			var envelope struct {
				ID    json.RawMessage `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			var data struct {
				Data json.RawMessage `json:"data"`
			}
			if json.Unmarshal(body, &envelope) != nil || json.Unmarshal(envelope.Error, &e) != nil ||
				!strings.Contains(e.Message, "unavailable") {
				t.Fatalf("body %q does not say in the binding's shape that the index is unavailable", body)
			}
			if want := map[string]string{"JSONRPC": "", "HTTP+JSON": "UNAVAILABLE"}[m.Binding]; e.Status != want {
				t.Fatalf("body %q: status %q, want %q", body, e.Status, want)
			}
			if m.Binding == "JSONRPC" && (e.Code != -32000 || len(envelope.ID) < 3) {
				t.Fatalf("body %q: want code -32000 and the request's id", body)
			}
			// A v0.3 JSON-RPC error has no data: the two v0.3 clients of a2a-go read it
			// in shapes that exclude each other.
			json.Unmarshal(envelope.Error, &data)
			if hasData := len(data.Data) > 0; m.Binding == "JSONRPC" && hasData != (m.Version == "1.0") {
				t.Fatalf("body %q: data present %v in version %s", body, hasData, m.Version)
			}
			if n := h.Agent.RunsOf(msg.ID); n != 0 {
				t.Fatalf("agent ran %d times", n)
			}
			unkeyed := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo unkeyed"))
			if evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: unkeyed}); err != nil || mwtest.FinalState(evs) != a2a.TaskStateCompleted {
				t.Fatalf("unkeyed send: %v, %v", evs, err)
			}
			for _, o := range h.Outcomes() {
				if o != middleware.OutcomeUnavailable {
					t.Fatalf("observed %v, want only unavailable", h.Outcomes())
				}
			}
		})
	}
}

// honouring is a memstore index that reports whether it honours keys.
type honouring struct {
	idempotency.KeyIndex
	ok bool
}

func (h honouring) HonoursKeys(context.Context) bool { return h.ok }

func TestIndexThatCannotHonourRefusesKeyedSends(t *testing.T) {
	for _, cfg := range []struct {
		name string
		cfg  mwtest.Config
	}{
		{"nil index", mwtest.Config{NoIndex: true}},
		{"not honouring", mwtest.Config{Index: honouring{KeyIndex: failingIndex(), ok: false}}},
	} {
		for _, m := range mwtest.Modes {
			t.Run(cfg.name+"/"+m.String(), func(t *testing.T) {
				h := mwtest.New(t, cfg.cfg)
				c := h.Client(m.Dialect, "", "")
				ctx := context.Background()
				msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo keyed")
				evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: msg})
				if !errors.Is(err, a2a.ErrUnsupportedOperation) || !strings.Contains(err.Error(), "cannot honour") {
					t.Fatalf("keyed send: %v, %v; want ErrUnsupportedOperation saying it cannot honour the key", evs, err)
				}
				if x := h.Wire.Last(); m.Binding == "HTTP+JSON" && (x.Status != 400 || !strings.Contains(string(x.RespBody.Bytes()), `"UNIMPLEMENTED"`)) {
					t.Fatalf("answer %d %s, want 400 UNIMPLEMENTED", x.Status, x.RespBody.Bytes())
				}
				if n := h.Agent.RunsOf(msg.ID); n != 0 {
					t.Fatalf("agent ran %d times", n)
				}
				unkeyed := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo unkeyed"))
				if evs, err := mwtest.Send(ctx, c, m.Streaming, &a2a.SendMessageRequest{Message: unkeyed}); err != nil || mwtest.FinalState(evs) != a2a.TaskStateCompleted {
					t.Fatalf("unkeyed send: %v, %v", evs, err)
				}
			})
		}
	}
}

func TestOversizeBodyGets413(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{MaxBodyBytes: 1024}})
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` +
		strings.Repeat("x", 2000) + `"}]}}}`
	for _, tc := range []struct {
		path    string
		chunked bool
		want    string
	}{
		{"/jsonrpc", false, `"code":-32600`},
		{"/jsonrpc", true, `"code":-32600`},
		{"/rest/message:send", false, `"status":"INVALID_ARGUMENT"`},
		{"/t/acme/message%3Astream", true, `"status":"INVALID_ARGUMENT"`},
		{mwtest.JSONRPC03Path, false, `"code":-32600`},
		{"/v1/message:stream", true, `"status":"INVALID_ARGUMENT"`},
	} {
		var body io.Reader = strings.NewReader(big)
		if tc.chunked {
			body = io.MultiReader(body) // unknown length: sent chunked
		}
		resp, err := h.HTTP.Post(h.Server.URL+tc.path, "application/json", body)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(got), tc.want) ||
			!strings.Contains(string(got), "1024 bytes") || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s (chunked=%v): %d %q", tc.path, tc.chunked, resp.StatusCode, got)
		}
	}
	if n := h.Agent.Runs(); n != 0 {
		t.Fatalf("agent ran for %d messages", n)
	}
	// Small bodies still pass.
	c := h.Client(mwtest.JSONRPC10, "", "")
	if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: mwtest.KeyedMessage(t, idempotency.NewKey(), "echo small")}); err != nil {
		t.Fatalf("small keyed send: %v", err)
	}
}

// The recorder of a forwarded send is an http.Flusher and unwraps to the server's
// own ResponseWriter, so http.ResponseController reaches it.
func TestResponseControllerThroughMiddleware(t *testing.T) {
	type result struct {
		flushErr, deadlineErr error
		flusher               bool
	}
	results := make(chan result, 1)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flusher := w.(http.Flusher)
		rc := http.NewResponseController(w)
		res := result{flusher: flusher, deadlineErr: rc.SetWriteDeadline(time.Now().Add(time.Minute))}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"r1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}`)
		res.flushErr = rc.Flush()
		results <- res
	})
	h := mwtest.New(t, mwtest.Config{Inner: inner})
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER",` +
		`"parts":[{"text":"hi"}],"metadata":{"` + idempotency.MetadataKey + `":"` + idempotency.NewKey() + `"}}}}`
	resp, err := h.HTTP.Post(h.Server.URL+"/jsonrpc", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	res := <-results
	if !res.flusher || res.flushErr != nil || res.deadlineErr != nil {
		t.Fatalf("through the middleware: Flusher %v, Flush %v, SetWriteDeadline %v", res.flusher, res.flushErr, res.deadlineErr)
	}
	h.ExpectOutcomes(middleware.OutcomeClaimed)
}

// A send whose answer the middleware cannot read leaves the key pending; it is not
// released (the agent may have run), and a retry waits and then gets 409.
func TestUnreadableAnswerKeepsKeyPending(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"weird":true}}`)
	})
	h := mwtest.New(t, mwtest.Config{Inner: inner, Opts: middleware.Options{ReplayWait: 50 * time.Millisecond, Lease: time.Hour}})
	body := `{"jsonrpc":"2.0","id":"r-1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER",` +
		`"parts":[{"text":"hi"}],"metadata":{"` + idempotency.MetadataKey + `":"0123456789abcdef0123"}}}}`
	for i, want := range []int{200, 409} {
		resp, err := h.HTTP.Post(h.Server.URL+"/jsonrpc", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("send %d: %d %q, want %d", i, resp.StatusCode, got, want)
		}
		if want == 409 {
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 3500 || ra > 3600 {
				t.Fatalf("Retry-After %q, want the lease left (about 3600)", resp.Header.Get("Retry-After"))
			}
			var e struct {
				ID    string `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(got, &e) != nil || e.ID != "r-1" || e.Error.Code != -32000 || !strings.Contains(e.Error.Message, "still in flight") {
				t.Fatalf("409 body %q", got)
			}
		}
	}
	h.ExpectOutcomes(middleware.OutcomeClaimed, middleware.OutcomeInFlight)
	logs := h.Logs.String()
	if !strings.Contains(logs, "could not learn what a keyed send produced") {
		t.Fatalf("logs %q do not explain the pending key", logs)
	}
	// The log shows the real time left on the lease, which the Retry-After is.
	if !strings.Contains(logs, "lease_left=59m59") || !strings.Contains(logs, "retry_after=59m59") {
		t.Fatalf("logs %q do not show the lease left (about 1h) as the Retry-After of the 409", logs)
	}
}

// Keys never reach logs in full above debug level.
func TestLogsRedactKeys(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{Index: failingIndex()})
	key := idempotency.NewKey()
	for _, m := range mwtest.Modes {
		mwtest.Send(context.Background(), h.Client(m.Dialect, "", ""), m.Streaming, &a2a.SendMessageRequest{Message: mwtest.KeyedMessage(t, key, "echo")})
	}
	logs := h.Logs.String()
	if !strings.Contains(logs, idempotency.RedactKey(key)) || strings.Contains(logs, key) {
		t.Fatalf("logs %q: want the redacted key only", logs)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	for _, opts := range []middleware.Options{
		{Lease: -time.Second},
		{MaxBodyBytes: -1},
		{IndexTimeout: -time.Second},
	} {
		if _, err := middleware.New(nil, opts); err == nil {
			t.Fatalf("New(%+v) succeeded", opts)
		}
	}
	if _, err := middleware.New(nil, middleware.Options{ReplayWait: -1}); err != nil {
		t.Fatalf("a negative ReplayWait (do not wait) was refused: %v", err)
	}
}

// A scope function refusing the request refuses the keyed send with its text.
func TestScopeErrorRefuses(t *testing.T) {
	scope := func(r *http.Request, tenant string) (string, error) {
		if r.Header.Get("X-Principal") == "" {
			return "", errors.New("sign in to send keyed messages")
		}
		return r.Header.Get("X-Principal") + "/" + tenant, nil
	}
	h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{Scope: scope}})
	for _, m := range mwtest.Modes {
		_, err := mwtest.Send(context.Background(), h.Client(m.Dialect, "", ""), m.Streaming,
			&a2a.SendMessageRequest{Message: mwtest.KeyedMessage(t, idempotency.NewKey(), "echo")})
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "sign in") {
			t.Fatalf("%s: %v", m, err)
		}
	}
	if n := h.Agent.Runs(); n != 0 {
		t.Fatalf("agent ran for %d messages", n)
	}
}

// httpDo is a test helper for raw requests.
func httpDo(t *testing.T, hc *http.Client, method, url, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, url, strings.NewReader(body))
	req.RequestURI = ""
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got
}

// A stream's keep-alives before its first event reach the client at once; only the
// first event waits for the key to be bound.
func TestKeepAlivesBeforeFirstEventFlowLive(t *testing.T) {
	proceed := make(chan struct{})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, ": keep-alive\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-proceed:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"task\":{\"id\":\"t-9\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n")
		w.(http.Flusher).Flush()
	})
	h := mwtest.New(t, mwtest.Config{Inner: inner})
	body := `{"jsonrpc":"2.0","id":"s","method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER",` +
		`"parts":[{"text":"hi"}],"metadata":{"` + idempotency.MetadataKey + `":"` + idempotency.NewKey() + `"}}}}`
	type first struct {
		resp  *http.Response
		bytes string
		err   error
	}
	read := make(chan first, 1)
	go func() {
		resp, err := h.HTTP.Post(h.Server.URL+"/jsonrpc", "application/json", strings.NewReader(body))
		if err != nil {
			read <- first{err: err}
			return
		}
		buf := make([]byte, len(": keep-alive\n\n"))
		_, err = io.ReadFull(resp.Body, buf)
		read <- first{resp, string(buf), err}
	}()
	var resp *http.Response
	select {
	case got := <-read:
		if got.err != nil || got.bytes != ": keep-alive\n\n" {
			t.Fatalf("first bytes %q, %v", got.bytes, got.err)
		}
		resp = got.resp
	case <-time.After(10 * time.Second):
		close(proceed)
		t.Fatal("the keep-alive was held back")
	}
	defer resp.Body.Close()
	close(proceed)
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), `"id":"t-9"`) {
		t.Fatalf("rest of the stream %q", rest)
	}
	h.ExpectOutcomes(middleware.OutcomeClaimed)
}
