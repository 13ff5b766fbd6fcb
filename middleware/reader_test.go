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
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2apb/v0/pbjson"
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

// a2av0JSONRPCSend returns how a2av0's JSON-RPC handler (and a2a-go v0.3.x's)
// decodes body, from testdata/jsonrpc03-readings.json: the v1.0 SendMessageRequest
// it hands the request handler, or false when it would answer an error without
// running anything. known is false for a body the fixture does not hold. (The
// harness module's TestReaderFixturesAreA2AGo holds the fixture to a2av0 itself.)
func a2av0JSONRPCSend(t *testing.T, body []byte) (req *a2a.SendMessageRequest, ok, known bool) {
	readings, err := jsonrpc03Readings()
	if err != nil {
		t.Fatalf("testdata/jsonrpc03-readings.json: %v", err)
	}
	raw, known := readings[string(body)]
	if !known || string(raw) == "null" {
		return nil, false, known
	}
	var p a2a.SendMessageRequest
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("testdata/jsonrpc03-readings.json: %v", err)
	}
	return &p, true, true
}

// jsonrpc03Readings is the fixture of a2av0's JSON-RPC readings, by body.
var jsonrpc03Readings = sync.OnceValues(func() (map[string]json.RawMessage, error) {
	var entries []struct {
		Body    string          `json:"body"`
		Request json.RawMessage `json:"request"`
	}
	b, err := os.ReadFile("testdata/jsonrpc03-readings.json")
	if err == nil {
		err = json.Unmarshal(b, &entries)
	}
	m := make(map[string]json.RawMessage, len(entries))
	for _, e := range entries {
		m[e.Body] = e.Request
	}
	return m, err
})

// a2av0RESTSend decodes body as a2av0's HTTP+JSON handler does.
func a2av0RESTSend(body []byte) (*a2a.SendMessageRequest, bool) {
	req, err := pbjson.FromProtoSendMessageRequest(body)
	return req, err == nil
}

// hasContent reports whether body's message has a content member that is not null,
// as encoding/json finds members.
func hasContent(body []byte) bool {
	var v struct {
		Message *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	return json.Unmarshal(body, &v) == nil && v.Message != nil && len(v.Message.Content) > 0 && string(v.Message.Content) != "null"
}

// runs reports whether a2a-go's request handler runs the agent for req: it refuses
// a message without id, parts or role before anything runs.
func runs(req *a2a.SendMessageRequest) bool {
	m := req.Message
	return m != nil && m.ID != "" && len(m.Parts) > 0 && m.Role != ""
}

// agreeKey reports how the middleware's reading s of a body that a2a-go runs as want
// differs from it on what the key is held by: the message id, the key, the task the
// message continues.
func agreeKey(s *send, want *a2a.SendMessageRequest) string {
	if s == nil || !s.hasMessage {
		return "a2a-go runs a send the middleware does not read"
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
	return ""
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
	if d := agreeKey(s, want); d != "" {
		return d
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
	// rest03Req is at v0.3's /v1 prefix, where a v1.0 server may be mounted too.
	rest03Req = httptest.NewRequest("POST", "/x/v1/message:send", nil)
)

// readAlone reads body as a JSON-RPC send of dialect d alone: nil and false when
// it is not one.
func readAlone(d rpcDialect, body []byte) (*send, bool) {
	s := readRPC(body)
	if s == nil || s.d != d {
		return nil, false
	}
	return s, true
}

// check fails when the middleware reads body differently from a2a-go, in any
// dialect, or when the fast path would skip a body that carries a key. The body is
// read as the middleware reads it (the first binding owning the path that reads a
// send), at a JSON-RPC path, at a v1.0 HTTP+JSON path, and at v0.3's /v1 HTTP+JSON
// path, where a v0.3 server or a v1.0 one may be.
func check(t *testing.T, body []byte) {
	t.Helper()
	fastPath := func(dialect string, want *a2a.SendMessageRequest, ok bool) {
		t.Helper()
		if ok && want.Message != nil && !mayCarryKey(body) {
			if _, keyed, err := idempotency.KeyOf(want.Message.Metadata); keyed || err != nil {
				t.Fatalf("%s body %q carries a key the fast path skips", dialect, body)
			}
		}
	}
	// Bindings read alone.
	s, ok := readAlone(jsonrpc10{}, body)
	want, wantOK := a2aJSONRPCSend(body)
	if d := agree(s, ok, want, wantOK); d != "" {
		t.Fatalf("JSON-RPC body %q: %s", body, d)
	}
	fastPath("JSON-RPC", want, wantOK)
	if want, wantOK, known := a2av0JSONRPCSend(t, body); known {
		s, ok := readAlone(jsonrpc03(), body)
		if d := agree(s, ok, want, wantOK); d != "" {
			t.Fatalf("v0.3 JSON-RPC body %q: %s", body, d)
		}
		fastPath("v0.3 JSON-RPC", want, wantOK)
	}
	s, ok = rest10{}.readSend("/t/acme", false, body)
	want, wantOK = a2aRESTSend(body)
	if d := agree(s, ok, want, wantOK); d != "" {
		t.Fatalf("HTTP+JSON body %q: %s", body, d)
	}
	fastPath("HTTP+JSON", want, wantOK)

	// As the middleware reads them, in the dialect of the server that runs them.
	for _, tc := range []struct {
		r      *http.Request
		server string
		decode func([]byte) (*a2a.SendMessageRequest, bool)
		b      dialect
	}{
		{jsonrpcReq, "v1.0 JSON-RPC", a2aJSONRPCSend, jsonrpc10{}},
		{jsonrpcReq, "v0.3 JSON-RPC", func(b []byte) (*a2a.SendMessageRequest, bool) {
			req, ok, _ := a2av0JSONRPCSend(t, b)
			return req, ok
		}, jsonrpc03()},
		{restReq, "v1.0 HTTP+JSON", a2aRESTSend, rest10{}},
		{rest03Req, "v1.0 HTTP+JSON under /v1", a2aRESTSend, rest10{}},
		{rest03Req, "v0.3 HTTP+JSON", a2av0RESTSend, rest03()},
	} {
		want, ok := tc.decode(body)
		if !ok || !runs(want) {
			continue
		}
		s := route(tc.r, body)
		if d := agreeKey(s, want); d != "" {
			t.Fatalf("%s body %q: %s", tc.server, body, d)
		}
		fastPath(tc.server, want, ok)
		if s.d != tc.b {
			// Only a crafted body holding both a v1.0 message's parts and a v0.3
			// message's content, which a v1.0 server under /v1 runs, is read in the
			// other dialect; the key is the same (checked above).
			if tc.r != rest03Req || tc.b != (rest10{}) || !hasContent(body) {
				t.Fatalf("%s body %q read as %s %s", tc.server, body, s.d.framing(), s.d.version())
			}
			continue
		}
		if d := agree(s, true, want, true); d != "" {
			t.Fatalf("%s body %q: %s", tc.server, body, d)
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
// with envelope variations, in A2A v1.0 and in v0.3.
func trickyBodies() (rpc, rest, rpc03, rest03 []string) {
	for _, p := range trickyParams {
		rpc = append(rpc,
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":`+p+`}`,
			`{"JSONRPC":"2.0","ID":"x","Method":"SendStreamingMessage","PARAMS":`+p+`} trailing garbage`,
			`{"jsonrpc":"2.0","method":"SendMessage","params":{"message":null},"params":`+p+`}`,
		)
		rest = append(rest, p, p+`{"and":"more"}`)
		p03 := toRPC03Params.Replace(p)
		rpc03 = append(rpc03,
			`{"jsonrpc":"2.0","id":1,"method":"message/send","params":`+p03+`}`,
			`{"JSONRPC":"2.0","ID":"x","Method":"message/stream","PARAMS":`+p03+`} trailing garbage`,
			`{"jsonrpc":"2.0","method":"message/send","params":{"message":null},"params":`+p03+`}`,
		)
		// a2av0's HTTP+JSON handler takes no bytes after the body.
		rest03 = append(rest03, toREST03Params.Replace(p))
	}
	return rpc, rest, rpc03, rest03
}

// toRPC03Params turns v1.0 params into v0.3 JSON-RPC ones: parts with a kind, roles in
// lower case.
var toRPC03Params = strings.NewReplacer(`{"text":"hi"}`, `{"kind":"text","text":"hi"}`,
	`{"TEXT":"hi"}`, `{"KIND":"text","TEXT":"hi"}`, `"ROLE_USER"`, `"user"`)

// toREST03Params turns v1.0 params into v0.3 HTTP+JSON ones: parts are content.
var toREST03Params = strings.NewReplacer(`"parts":`, `"content":`, `"Parts":`, `"Content":`)

func FuzzRequestReader(f *testing.F) {
	rpc, rest, rpc03, rest03 := trickyBodies()
	for _, b := range slices.Concat(rpc, rest, rpc03, rest03) {
		f.Add([]byte(b))
	}
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":{},"method":"SendMessage","params":` + trickyParams[0] + `}`,
		`{"jsonrpc":"1.0","id":1,"method":"SendMessage","params":` + trickyParams[0] + `}`,
		`[` + trickyParams[0] + `]`,
		`{"message":{"messageId":5}}`,
		`{"configuration":{"historyLength":1.5},"message":{"messageId":"m"}}`,
		`{"configuration":{"historyLength":3000000000},"message":{"messageId":"m","content":[{"text":"hi"}],"role":"ROLE_USER"}}`,
		`{"tenant":5,"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"content":[{"text":"hi"}],` +
			`"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
		`{"tenant":"acme","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"content":null,` +
			`"metadata":{"a2a-rust.com/idempotency-key":"` + k16 + `"}}}`,
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
	rpc, rest, rpc03, rest03 := trickyBodies()
	for _, b := range slices.Concat(rpc, rest, rpc03, rest03) {
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

// readFixture decodes the JSON fixture testdata/name into v.
func readFixture(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
}

// server03Runs reads testdata/server03-runs.json: the message a2a-go's v0.3
// handlers (a2acompat/a2av0, at paths /v03 and /v1/message:send) handed the agent
// for each tricky body, by path and body, nil when they ran nothing. The harness
// module's TestReaderFixturesAreA2AGo holds the fixture to those handlers.
func server03Runs(t *testing.T) map[string]*a2a.Message {
	var entries []struct {
		Path string       `json:"path"`
		Body string       `json:"body"`
		Ran  *a2a.Message `json:"ran"`
	}
	readFixture(t, "server03-runs.json", &entries)
	runs := make(map[string]*a2a.Message, len(entries))
	for _, e := range entries {
		runs[e.Path+" "+e.Body] = e.Ran
	}
	return runs
}

// The middleware reads the messageId and the key the real a2a-go server hands its
// agent, for every tricky body, in every dialect: a2a-go's v1.0 handlers, its v0.3
// handlers (a2acompat/a2av0, through the fixture server03Runs reads), and a v1.0
// HTTP+JSON handler mounted under /v1, where v0.3's paths are.
func TestReaderAgreesWithServer(t *testing.T) {
	agent := &seenAgent{}
	rh := a2asrv.NewHandler(agent, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	handlers := map[string]http.Handler{
		"/jsonrpc":               a2asrv.NewJSONRPCHandler(rh),
		"/t/acme/message:send":   http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", rh)),
		"/api/v1/message:stream": http.StripPrefix("/api/v1", a2asrv.NewRESTHandler(rh)),
	}
	runs03 := server03Runs(t)
	ran := func(path, body string) *a2a.Message {
		if h, ok := handlers[path]; ok {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", path, strings.NewReader(body)))
			return agent.last()
		}
		m, ok := runs03[path+" "+body]
		if !ok {
			t.Fatalf("testdata/server03-runs.json has no run of %s %q: regenerate it in the harness module", path, body)
		}
		return m
	}
	rpc, rest, rpc03, rest03 := trickyBodies()
	executed := 0
	run := func(path, version, body string) {
		got := ran(path, body)
		s := route(httptest.NewRequest("POST", path, nil), []byte(body))
		if got == nil {
			return // the server ran nothing
		}
		executed++
		if s == nil || !s.hasMessage {
			t.Fatalf("%s %q: the server ran message %q; the middleware did not read a send", path, body, got.ID)
		}
		if string(s.d.version()) != version {
			t.Fatalf("%s %q: read as %s %s, want version %s", path, body, s.d.framing(), s.d.version(), version)
		}
		key, keyed, err := idempotency.KeyOf(got.Metadata)
		if s.messageID != got.ID || s.key != key || s.keyed != (keyed || err != nil) || !sameError(s.keyErr, err) {
			t.Fatalf("%s %q: server ran message %q with key %q (%v); middleware read %q, key %q (%v)",
				path, body, got.ID, key, err, s.messageID, s.key, s.keyErr)
		}
	}
	for _, body := range rpc {
		run("/jsonrpc", "1.0", body)
	}
	for _, body := range rest {
		run("/t/acme/message:send", "1.0", body)
		run("/api/v1/message:stream", "1.0", body)
	}
	for _, body := range rpc03 {
		run("/v03", "0.3", body)
	}
	for _, body := range rest03 {
		run("/v1/message:send", "0.3", body)
	}
	// Every tricky params ran in every dialect, in every envelope.
	if want := 11 * len(trickyParams); executed != want {
		t.Fatalf("the server ran %d of the %d bodies", executed, want)
	}
}
