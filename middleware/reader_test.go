package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
)

// a2aRequest mirrors a2a-go's internal/jsonrpc.ServerRequest (internal, so it cannot
// be imported), which a2asrv.NewJSONRPCHandler decodes a body into.
// TestReaderAgreesWithServer checks the mirror against the real handler.
type a2aRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      any             `json:"id"`
}

// a2aJSONRPCSend decodes body as a2asrv's JSON-RPC handler does, and returns the
// SendMessageRequest it would hand to the request handler, or false when it would
// answer an error without running anything.
func a2aJSONRPCSend(body []byte) (*a2a.SendMessageRequest, bool) {
	var req a2aRequest
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return nil, false
	}
	switch req.ID.(type) {
	case nil, string, float64:
	default:
		return nil, false
	}
	if req.JSONRPC != "2.0" || (req.Method != "SendMessage" && req.Method != "SendStreamingMessage") {
		return nil, false
	}
	var p a2a.SendMessageRequest
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, false
	}
	return &p, true
}

// a2aRESTSend decodes body as a2asrv's HTTP+JSON handler does.
func a2aRESTSend(body []byte) (*a2a.SendMessageRequest, bool) {
	var p a2a.SendMessageRequest
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return nil, false
	}
	return &p, true
}

// agree reports how the middleware's reading s (ok) of a body differs from a2a-go's
// reading want (wantOK), or "" when it does not. A body a2a-go refuses runs nothing,
// so any reading of it is safe.
func agree(s *send, ok bool, want *a2a.SendMessageRequest, wantOK bool) string {
	if !wantOK {
		return ""
	}
	if !ok {
		return "a2a-go accepts a send the middleware does not recognise"
	}
	if (want.Message != nil) != s.hasMessage {
		return "they disagree on whether the message is absent"
	}
	if s.tenant != want.Tenant {
		return "tenant " + s.tenant + " vs " + want.Tenant
	}
	if want.Message == nil {
		if s.keyed {
			return "a key without a message"
		}
		return ""
	}
	if s.messageID != want.Message.ID {
		return "messageId " + s.messageID + " vs " + want.Message.ID
	}
	if s.taskID != string(want.Message.TaskID) {
		return "taskId " + s.taskID + " vs " + string(want.Message.TaskID)
	}
	key, keyed, err := idempotency.KeyOf(want.Message.Metadata)
	if s.keyed != (keyed || err != nil) || s.key != key || !sameError(s.keyErr, err) {
		return "key " + s.key + " vs " + key
	}
	var wantHL *int
	if want.Config != nil {
		wantHL = want.Config.HistoryLength
	}
	if (s.historyLength == nil) != (wantHL == nil) || (wantHL != nil && *wantHL != *s.historyLength) {
		return "historyLength differs"
	}
	return ""
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return errors.Is(a, b) && errors.Is(b, a)
}

var (
	jsonrpcReq = httptest.NewRequest("POST", "/jsonrpc", nil)
	restReq    = httptest.NewRequest("POST", "/t/acme/message:send", nil)
)

// check fails when the middleware reads body differently from a2a-go, on either
// binding, or when the fast path would skip a body that carries a key.
func check(t *testing.T, body []byte) {
	t.Helper()
	s, ok := jsonrpcBinding{}.readSend(jsonrpcReq, body)
	want, wantOK := a2aJSONRPCSend(body)
	if d := agree(s, ok, want, wantOK); d != "" {
		t.Fatalf("JSON-RPC body %q: %s", body, d)
	}
	if wantOK && want.Message != nil && !mayCarryKey(body) {
		if _, keyed, err := idempotency.KeyOf(want.Message.Metadata); keyed || err != nil {
			t.Fatalf("JSON-RPC body %q carries a key the fast path skips", body)
		}
	}
	s, ok = restBinding{}.readSend(restReq, body)
	want, wantOK = a2aRESTSend(body)
	if d := agree(s, ok, want, wantOK); d != "" {
		t.Fatalf("HTTP+JSON body %q: %s", body, d)
	}
	if wantOK && want.Message != nil && !mayCarryKey(body) {
		if _, keyed, err := idempotency.KeyOf(want.Message.Metadata); keyed || err != nil {
			t.Fatalf("HTTP+JSON body %q carries a key the fast path skips", body)
		}
	}
}

const k16 = "0123456789abcdef"

// trickyParams are send params that a lenient or a strict parser would read
// differently from encoding/json.
var trickyParams = []string{
	`{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"MESSAGE":{"MessageID":"m2","ROLE":"ROLE_USER","Parts":[{"TEXT":"hi"}],"METADATA":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"first","messageId":"last","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"a","metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `x"}},"message":{"messageId":"b","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
	`{"message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"},"metadata":{"other":1}}}`,
	`{"message":{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com\/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"m5","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"\u0061\u0032a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"m6","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"A2A-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"m7","role":"ROLE_USER","parts":[{"text":"hi"}]},"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}`,
	`{"message":{"meſſageId":"m8","messageId":"m8b","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"m9","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":42}}}`,
	`{"message":{"messageId":"m10","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `","a2a-rust.com/idempotency-key":"short"}}}`,
	`{"tenant":"acme","configuration":{"historyLength":2},"message":{"messageId":"m11","taskId":"","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
	`{"message":{"messageId":"m12","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `\u0000"}}}`,
}

// trickyBodies returns the JSON-RPC and HTTP+JSON bodies built from trickyParams,
// with envelope variations.
func trickyBodies() (rpc, rest []string) {
	for _, p := range trickyParams {
		rpc = append(rpc,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+p+`}`,
			`{"JSONRPC":"2.0","ID":"x","Method":"SendStreamingMessage","PARAMS":`+p+`} trailing garbage`,
			`{"jsonrpc":"2.0","method":"SendMessage","params":{"message":null},"params":`+p+`}`,
		)
		rest = append(rest, p, p+`{"and":"more"}`)
	}
	return rpc, rest
}

func FuzzRequestReader(f *testing.F) {
	rpc, rest := trickyBodies()
	for _, b := range append(rpc, rest...) {
		f.Add([]byte(b))
	}
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":{},"method":"SendMessage","params":` + trickyParams[0] + `}`,
		`{"jsonrpc":"1.0","id":1,"method":"SendMessage","params":` + trickyParams[0] + `}`,
		`[` + trickyParams[0] + `]`,
		`{"message":{"messageId":5}}`,
		`{"configuration":{"historyLength":1.5},"message":{"messageId":"m"}}`,
		``,
		`null`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check(t, body)
	})
}

func TestReaderAgreesWithDecoding(t *testing.T) {
	rpc, rest := trickyBodies()
	for _, b := range append(rpc, rest...) {
		check(t, []byte(b))
	}
}

// seenAgent records the message each run was handed.
type seenAgent struct {
	mu   sync.Mutex
	seen []*a2a.Message
}

func (a *seenAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.mu.Lock()
		a.seen = append(a.seen, ec.Message)
		a.mu.Unlock()
		yield(a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("ok")), nil)
	}
}

func (a *seenAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {}
}

func (a *seenAgent) last() *a2a.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return nil
	}
	m := a.seen[len(a.seen)-1]
	a.seen = nil
	return m
}

// The middleware reads the messageId and the key the real a2a-go server hands its
// agent, for every tricky body, on both bindings.
func TestReaderAgreesWithServer(t *testing.T) {
	agent := &seenAgent{}
	rh := a2asrv.NewHandler(agent, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	handlers := map[string]http.Handler{
		"/jsonrpc":             a2asrv.NewJSONRPCHandler(rh),
		"/t/acme/message:send": http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", rh)),
	}
	rpc, rest := trickyBodies()
	executed := 0
	run := func(path string, b binding, body string) {
		w := httptest.NewRecorder()
		handlers[path].ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(body)))
		got := agent.last()
		s, ok := b.readSend(httptest.NewRequest("POST", path, nil), []byte(body))
		if got == nil {
			return // the server ran nothing
		}
		executed++
		if !ok || !s.hasMessage {
			t.Fatalf("%s %q: the server ran message %q; the middleware did not read a send", path, body, got.ID)
		}
		key, keyed, err := idempotency.KeyOf(got.Metadata)
		if s.messageID != got.ID || s.key != key || s.keyed != (keyed || err != nil) || !sameError(s.keyErr, err) {
			t.Fatalf("%s %q: server ran message %q with key %q (%v); middleware read %q, key %q (%v)",
				path, body, got.ID, key, err, s.messageID, s.key, s.keyErr)
		}
	}
	for _, body := range rpc {
		run("/jsonrpc", jsonrpcBinding{}, body)
	}
	for _, body := range rest {
		run("/t/acme/message:send", restBinding{}, body)
	}
	// Every tricky params ran on both bindings, in every envelope.
	if want := 5 * len(trickyParams); executed != want {
		t.Fatalf("the server ran %d of the %d bodies", executed, want)
	}
}
