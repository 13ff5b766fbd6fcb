// Package sendtest sends keyed A2A v1.0 sends as raw wire JSON, unary or streaming, on
// the JSON-RPC binding (at /jsonrpc) and the HTTP+JSON binding (under /rest), and
// reads their answers and events, for the end-to-end tests of servers behind the kit
// (anyserver, routers). Raw bytes rather than a2a-go's client, because the tests cut
// connections at chosen points and check what a2a-go's client hides: the HTTP status,
// Retry-After, the error's code.
package sendtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// Binding is an A2A v1.0 binding, as wireclient names them.
type Binding = wireclient.Binding

// The bindings.
const (
	JSONRPC  = wireclient.JSONRPC
	HTTPJSON = wireclient.HTTPJSON
)

// Bindings lists both.
var Bindings = wireclient.Bindings

// Task states the tests look for.
const (
	Working   = "TASK_STATE_WORKING"
	Completed = "TASK_STATE_COMPLETED"
)

// Msg is one send. A zero Key sends no key.
type Msg struct {
	Binding   Binding
	Streaming bool
	ID, Key   string
	Text      string
	// Header is added to the request.
	Header http.Header
	// Pad, when set, makes the body at least that many bytes long.
	Pad int
}

// NewMsg returns a keyed send with a fresh messageId and key.
func NewMsg(b Binding, streaming bool, text string) Msg {
	return Msg{Binding: b, Streaming: streaming, ID: "m-" + idempotency.NewKey()[:12], Key: idempotency.NewKey(), Text: text}
}

// Request returns the request of m to the server at base.
func (m Msg) Request(ctx context.Context, base string) *http.Request {
	return m.request(ctx, base, m.Key)
}

// request is Request with key as the metadata value, a JSON value of any type
// (for malformed keys).
func (m Msg) request(ctx context.Context, base string, key any) *http.Request {
	message := map[string]any{"messageId": m.ID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": m.Text}}}
	if key != "" {
		message["metadata"] = map[string]any{idempotency.MetadataKey: key}
		message["extensions"] = []string{idempotency.ExtensionURI}
	}
	if m.Pad > 0 {
		message["parts"] = append(message["parts"].([]any), map[string]any{"text": strings.Repeat("x", m.Pad)})
	}
	var body any = map[string]any{"message": message}
	path := "/rest/message:send"
	if m.Streaming {
		path = "/rest/message:stream"
	}
	if m.Binding == JSONRPC {
		method := "SendMessage"
		if m.Streaming {
			method = "SendStreamingMessage"
		}
		body = map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": body}
		path = "/jsonrpc"
	}
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if m.Streaming {
		req.Header.Set("Accept", "text/event-stream")
	}
	for k, v := range m.Header {
		req.Header[k] = v
	}
	return req
}

// Answer is one answer, or one event of a streamed answer.
type Answer struct {
	Status     int
	RetryAfter string
	// Kind is task, message, statusUpdate, artifactUpdate or error (unreadable or
	// unknown otherwise).
	Kind   string
	TaskID string
	// MessageID is a Message answer's messageId.
	MessageID string
	State     string
	// Code is a JSON-RPC error's code, or the HTTP status of an HTTP+JSON error's
	// body; ErrStatus is the latter's status name (UNAVAILABLE, ...).
	Code      int
	ErrStatus string
	Message   string
	Raw       string
}

func (a Answer) String() string {
	return fmt.Sprintf("HTTP %d %s task=%s state=%s code=%d %s: %.300s", a.Status, a.Kind, a.TaskID, a.State, a.Code, a.ErrStatus, a.Raw)
}

// IsTask reports whether a is a 200 answer with a task.
func (a Answer) IsTask() bool { return a.Status == http.StatusOK && a.Kind == "task" && a.TaskID != "" }

// Parse reads one answer body, or one event's data, with its HTTP status.
func Parse(status int, data []byte) Answer {
	a := Answer{Status: status, Raw: string(data)}
	var env map[string]json.RawMessage
	if json.Unmarshal(data, &env) != nil {
		a.Kind = "unreadable"
		return a
	}
	var e struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if _, ok := env["jsonrpc"]; ok {
		if raw, ok := env["error"]; ok {
			json.Unmarshal(raw, &e)
			a.Kind, a.Code, a.Message = "error", e.Code, e.Message
			return a
		}
		if json.Unmarshal(env["result"], &env) != nil {
			a.Kind = "unreadable"
			return a
		}
	}
	var obj struct {
		ID        string `json:"id"`
		TaskID    string `json:"taskId"`
		MessageID string `json:"messageId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
	}
	for _, k := range []string{"task", "message", "statusUpdate", "artifactUpdate"} {
		if raw, ok := env[k]; ok {
			a.Kind = k
			json.Unmarshal(raw, &obj)
			a.TaskID, a.State = obj.TaskID, obj.Status.State
			switch k {
			case "task":
				a.TaskID = obj.ID
			case "message":
				a.MessageID = obj.MessageID
			}
			return a
		}
	}
	if raw, ok := env["error"]; ok {
		json.Unmarshal(raw, &e)
		a.Kind, a.Code, a.ErrStatus, a.Message = "error", e.Code, e.Status, e.Message
		return a
	}
	a.Kind = "unknown"
	return a
}

// Client is the HTTP client the package sends with.
var Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}

// Send sends m unary (or reads a streamed answer's first event) and returns the answer.
func Send(ctx context.Context, base string, m Msg) (Answer, error) {
	return do(m.Request(ctx, base), m.Binding, m.Key)
}

// SendKey is Send with key, any JSON value, as the message's idempotency key.
func SendKey(ctx context.Context, base string, m Msg, key any) (Answer, error) {
	k, _ := key.(string)
	return do(m.request(ctx, base, key), m.Binding, k)
}

// Markers holds the answer of every Send and SendKey (the first event of a
// stream) to the rule of the replay marker; a package's tests check it at their end
// (TestMain).
var Markers wireclient.MarkerRule

// do sends req, a send of binding b keyed with key (or with none, or a malformed
// one, when empty), and reads its answer.
func do(req *http.Request, b Binding, key string) (Answer, error) {
	resp, err := Client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		s := &Stream{resp: resp, sc: newScanner(resp.Body)}
		a, err := s.Next()
		a.RetryAfter = resp.Header.Get("Retry-After")
		if err == nil {
			Markers.Check(key, wireclient.Classify(resp.StatusCode, resp.Header, b, []byte(a.Raw)))
		}
		return a, err
	}
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, err
	}
	a := Parse(resp.StatusCode, data)
	a.RetryAfter = resp.Header.Get("Retry-After")
	Markers.Check(key, wireclient.Classify(resp.StatusCode, resp.Header, b, data))
	return a, nil
}

// Stream is a streamed answer being read.
type Stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func newScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	return sc
}

// OpenStream sends m, a streaming send. An answer that is not a stream is returned
// as an error.
func OpenStream(ctx context.Context, base string, m Msg) (*Stream, error) {
	resp, err := Client.Do(m.Request(ctx, base))
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("not a stream: %v", Parse(resp.StatusCode, b))
	}
	return &Stream{resp: resp, sc: newScanner(resp.Body)}, nil
}

// Next returns the next event, or io.EOF at the end of the stream.
func (s *Stream) Next() (Answer, error) {
	var data []byte
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if data != nil {
				return Parse(s.resp.StatusCode, data), nil
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimSpace(d)...)
		}
	}
	if data != nil {
		return Parse(s.resp.StatusCode, data), nil
	}
	if err := s.sc.Err(); err != nil {
		return Answer{}, err
	}
	return Answer{}, io.EOF
}

// Rest reads the events left, up to the end of the stream.
func (s *Stream) Rest() ([]Answer, error) {
	var all []Answer
	for {
		a, err := s.Next()
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
		all = append(all, a)
	}
}

// Close closes the stream: the client leaves.
func (s *Stream) Close() { s.resp.Body.Close() }

// RetryUntil sends m (unary or not, its first answer) until check accepts an answer or
// timeout passes, and returns the accepted answer.
func RetryUntil(t testing.TB, base string, m Msg, timeout time.Duration, check func(Answer) bool) Answer {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last Answer
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		a, err := Send(ctx, base, m)
		cancel()
		if err == nil && check(a) {
			return a
		}
		last, lastErr = a, err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no accepted answer within %v; last: %v, %v", timeout, last, lastErr)
	return Answer{}
}
