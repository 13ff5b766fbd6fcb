// Package wireclient sends A2A v1.0 SendMessage and SendStreamingMessage requests as
// raw wire JSON over HTTP, on the JSON-RPC and the HTTP+JSON binding, and classifies
// the answers: a task, a Message, or one of the refusals the kit's middleware and
// a2a-go answer with.
//
// The kit's benchmarks, load harness, crash and fault tests use it instead of
// a2a-go's client: posting bytes keeps the client's cost low and equal for a bare and
// a wrapped server, and the tests need to see what a2a-go's client hides (the HTTP
// status, Retry-After, a 409's body).
package wireclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// Binding names an A2A protocol binding as the middleware's events do.
type Binding string

// The bindings.
const (
	JSONRPC  Binding = "JSONRPC"
	HTTPJSON Binding = "HTTP+JSON"
)

// Bindings lists both bindings.
var Bindings = []Binding{JSONRPC, HTTPJSON}

// Send is one send.
type Send struct {
	Binding   Binding
	Streaming bool
	MessageID string
	// Key is the idempotency key; empty sends an unkeyed message.
	Key string
	// Text is the message's one text part.
	Text string
	// KeyHeader holds the values of the Idempotency-Key request header, the key's
	// second carrier (none: no header). With Key empty, the header carries the key
	// alone.
	KeyHeader []string
	// StopAfterFirstEvent makes Do close a streamed answer after its first event, as a
	// client that drops the connection does.
	StopAfterFirstEvent bool
}

// Body returns the request body of s on its binding.
func (s Send) Body() []byte {
	type part struct {
		Text string `json:"text"`
	}
	type message struct {
		MessageID  string            `json:"messageId"`
		Role       string            `json:"role"`
		Parts      []part            `json:"parts"`
		Metadata   map[string]string `json:"metadata,omitempty"`
		Extensions []string          `json:"extensions,omitempty"`
	}
	type params struct {
		Message message `json:"message"`
	}
	p := params{Message: message{MessageID: s.MessageID, Role: "ROLE_USER", Parts: []part{{s.Text}}}}
	if s.Key != "" {
		p.Message.Metadata = map[string]string{idempotency.MetadataKey: s.Key}
		p.Message.Extensions = []string{idempotency.ExtensionURI}
	}
	if s.Binding == HTTPJSON {
		b, _ := json.Marshal(p)
		return b
	}
	method := "SendMessage"
	if s.Streaming {
		method = "SendStreamingMessage"
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", "req-" + s.MessageID, method, p})
	return b
}

// Client sends to one server.
type Client struct {
	// BaseURL is the server's base URL, without a trailing slash.
	BaseURL string
	// JSONRPCPath is the path of the JSON-RPC endpoint; default "/jsonrpc".
	JSONRPCPath string
	// RESTPath is the mount point of the HTTP+JSON binding; default "/rest".
	RESTPath string
	// HTTP sends the requests; default http.DefaultClient.
	HTTP *http.Client
}

// URL returns the URL s is posted to.
func (c *Client) URL(s Send) string {
	if s.Binding == HTTPJSON {
		p := c.RESTPath
		if p == "" {
			p = "/rest"
		}
		if s.Streaming {
			return c.BaseURL + p + "/message:stream"
		}
		return c.BaseURL + p + "/message:send"
	}
	p := c.JSONRPCPath
	if p == "" {
		p = "/jsonrpc"
	}
	return c.BaseURL + p
}

// Request returns the HTTP request of s, with body.
func (c *Client) Request(ctx context.Context, s Send, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL(s), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if s.Streaming {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if s.Key != "" || len(s.KeyHeader) > 0 {
		req.Header.Add("A2A-Extensions", idempotency.ExtensionURI)
	}
	for _, v := range s.KeyHeader {
		req.Header.Add(idempotency.KeyHeader, v)
	}
	return req, nil
}

// Kind classifies an answer.
type Kind int

// The kinds of answers.
const (
	// Unreadable: the answer could not be read as any A2A answer.
	Unreadable Kind = iota
	// Task: a task (a non-streamed task result, or a stream whose first event names a task).
	Task
	// Message: the agent's Message reply.
	Message
	// AlreadyHeld: the key is held by another message ("already held").
	AlreadyHeld
	// InFlight: HTTP 409, the first attempt is still in flight.
	InFlight
	// Unavailable: HTTP 503, the index is unavailable.
	Unavailable
	// TooLarge: HTTP 413.
	TooLarge
	// TaskNotFound: the key's task does not exist.
	TaskNotFound
	// Refused: any other A2A error.
	Refused
)

var kindNames = [...]string{"unreadable", "task", "message", "already-held", "in-flight", "unavailable", "too-large", "task-not-found", "refused"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Answer is what a server answered to a send.
type Answer struct {
	Kind   Kind
	Status int
	// TaskID is the task a Task answer names.
	TaskID string
	// State is the task's state in a Task answer (TASK_STATE_WORKING, say), when the
	// answer, or a stream's first event, carries the task or a status update.
	State string
	// MessageID is the id of a Message answer.
	MessageID string
	// Code, Reason and ErrMessage describe an error answer: the JSON-RPC error code or
	// HTTP+JSON HTTP status, the first ErrorInfo reason (A2A's), and the message.
	// KitReason is the reason of the ErrorInfo in the kit's own domain
	// (middleware.ReasonDomain), when there is one.
	Code       int
	Reason     string
	KitReason  string
	ErrMessage string
	// RetryAfter is the Retry-After header, zero when absent.
	RetryAfter time.Duration
	// Extension reports whether the A2A-Extensions response header lists the
	// idempotency extension.
	Extension bool
	// Replayed reports whether the answer carries Idempotent-Replayed: true, the
	// marker of an answer served from a first attempt.
	Replayed bool
	// Events counts the events of a streamed answer.
	Events int
	// Header holds the response headers.
	Header http.Header
	// Raw is the body of a non-streamed answer, or the data of a stream's first event,
	// truncated to 4 KiB.
	Raw []byte
}

func (a Answer) String() string {
	switch a.Kind {
	case Task:
		return fmt.Sprintf("task %s", a.TaskID)
	case Message:
		return fmt.Sprintf("message %s", a.MessageID)
	}
	return fmt.Sprintf("%s (HTTP %d, code %d, reason %s): %s", a.Kind, a.Status, a.Code, a.Reason, a.ErrMessage)
}

// Do sends s and reads the whole answer. An error means no answer was read: the
// connection failed or dropped, ctx ended, or a stream ended inside an event.
func (c *Client) Do(ctx context.Context, s Send) (Answer, error) {
	return c.DoBody(ctx, s, s.Body())
}

// DoBody is Do with body in place of s.Body(): s then only chooses the URL, the
// headers and how the answer is read. Tests send malformed bodies with it.
func (c *Client) DoBody(ctx context.Context, s Send, body []byte) (Answer, error) {
	req, err := c.Request(ctx, s, body)
	if err != nil {
		return Answer{}, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	return ReadAnswer(resp, s)
}

// ReadAnswer reads resp, the answer to s (s only chooses how it is read: its
// binding, whether it stops after a stream's first event). An error means the answer
// could not be read whole: a stream ended inside an event, or the body failed.
func ReadAnswer(resp *http.Response, s Send) (Answer, error) {
	a := headerAnswer(resp.StatusCode, resp.Header)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readStream(resp.Body, s, a)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return a, err
	}
	a.Raw = truncate(answer)
	classify(&a, s.Binding, answer)
	return a, nil
}

// headerAnswer returns the answer as its status and headers describe it.
func headerAnswer(status int, header http.Header) Answer {
	a := Answer{Status: status, Header: header, Replayed: header.Get(idempotency.ReplayedHeader) == "true"}
	for _, v := range header.Values("A2A-Extensions") {
		for f := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(f) == idempotency.ExtensionURI {
				a.Extension = true
			}
		}
	}
	if ra := header.Get("Retry-After"); ra != "" {
		if n, err := strconv.Atoi(ra); err == nil {
			a.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return a
}

// Classify returns the answer of binding b with status and header whose body (or
// first event's data) is data.
func Classify(status int, header http.Header, b Binding, data []byte) Answer {
	a := headerAnswer(status, header)
	a.Raw = truncate(data)
	classify(&a, b, data)
	return a
}

// readStream reads the events of a streamed answer.
func readStream(body io.Reader, s Send, a Answer) (Answer, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data bytes.Buffer
	complete := true
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if data.Len() == 0 {
				continue
			}
			complete = true
			ev := data.Bytes()
			if a.Events == 0 {
				a.Raw = truncate(ev)
				classify(&a, s.Binding, ev)
			} else if a.Kind == Task {
				var e Answer
				classify(&e, s.Binding, ev)
				if e.Kind == Task && e.TaskID != a.TaskID {
					return a, fmt.Errorf("stream names task %s after task %s", e.TaskID, a.TaskID)
				}
			}
			a.Events++
			data.Reset()
			if s.StopAfterFirstEvent {
				return a, nil
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			complete = false
			data.Write(bytes.TrimPrefix(d, []byte(" ")))
		}
	}
	if err := sc.Err(); err != nil {
		return a, err
	}
	if !complete || a.Events == 0 {
		return a, io.ErrUnexpectedEOF
	}
	return a, nil
}

// wireAnswer is the union of the answers of both bindings: a JSON-RPC response,
// an HTTP+JSON StreamResponse, or an HTTP+JSON google.rpc.Status error.
type wireAnswer struct {
	Result *streamResponse `json:"result"`
	streamResponse
	Error json.RawMessage `json:"error"`
}

type streamResponse struct {
	Task *struct {
		ID     string     `json:"id"`
		Status wireStatus `json:"status"`
	} `json:"task"`
	Message *struct {
		MessageID string `json:"messageId"`
	} `json:"message"`
	StatusUpdate *struct {
		TaskID string     `json:"taskId"`
		Status wireStatus `json:"status"`
	} `json:"statusUpdate"`
	ArtifactUpdate *struct {
		TaskID string `json:"taskId"`
	} `json:"artifactUpdate"`
	// A2A v0.3's results are the object itself, named by kind.
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	TaskID    string `json:"taskId"`
	MessageID string `json:"messageId"`
}

type wireStatus struct {
	State string `json:"state"`
}

type wireError struct {
	Code    int         `json:"code"`
	Status  string      `json:"status"`
	Message string      `json:"message"`
	Data    []errorInfo `json:"data"`
	Details []errorInfo `json:"details"`
}

type errorInfo struct {
	Reason string `json:"reason"`
	Domain string `json:"domain"`
}

// kitDomain is the ErrorInfo domain of the kit's own reasons (middleware.ReasonDomain,
// which this package does not import).
const kitDomain = "github.com/a2akit/idempotency"

// classify fills a's kind and details from one answer body or event data.
func classify(a *Answer, b Binding, body []byte) {
	switch a.Status {
	case http.StatusConflict:
		a.Kind = InFlight
	case http.StatusServiceUnavailable:
		a.Kind = Unavailable
	case http.StatusRequestEntityTooLarge:
		a.Kind = TooLarge
	}
	var w wireAnswer
	if err := json.Unmarshal(body, &w); err != nil {
		if a.Kind == Unreadable && a.Status != http.StatusOK {
			a.Kind = Refused
			a.Code = a.Status
			a.ErrMessage = string(truncate(body))
		}
		return
	}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		var e wireError
		_ = json.Unmarshal(w.Error, &e)
		a.Code, a.ErrMessage = e.Code, e.Message
		for _, d := range append(e.Data, e.Details...) {
			if d.Domain == kitDomain {
				a.KitReason = d.Reason
			} else if d.Reason != "" && a.Reason == "" {
				a.Reason = d.Reason
			}
		}
		if a.Kind != Unreadable {
			return
		}
		switch {
		case a.Reason == "TASK_NOT_FOUND" || (b == JSONRPC && e.Code == -32001) || (b == HTTPJSON && e.Code == http.StatusNotFound):
			a.Kind = TaskNotFound
		case strings.Contains(e.Message, "already held"):
			a.Kind = AlreadyHeld
		default:
			a.Kind = Refused
		}
		return
	}
	if a.Kind != Unreadable {
		return
	}
	r := &w.streamResponse
	if w.Result != nil {
		r = w.Result
	}
	switch {
	case r.Task != nil && r.Task.ID != "":
		a.Kind, a.TaskID, a.State = Task, r.Task.ID, r.Task.Status.State
	case r.Message != nil:
		a.Kind, a.MessageID = Message, r.Message.MessageID
	case r.StatusUpdate != nil && r.StatusUpdate.TaskID != "":
		a.Kind, a.TaskID, a.State = Task, r.StatusUpdate.TaskID, r.StatusUpdate.Status.State
	case r.ArtifactUpdate != nil && r.ArtifactUpdate.TaskID != "":
		a.Kind, a.TaskID = Task, r.ArtifactUpdate.TaskID
	case r.Kind == "task" && r.ID != "":
		a.Kind, a.TaskID = Task, r.ID
	case r.Kind == "message" && r.MessageID != "":
		a.Kind, a.MessageID = Message, r.MessageID
	case (r.Kind == "status-update" || r.Kind == "artifact-update") && r.TaskID != "":
		a.Kind, a.TaskID = Task, r.TaskID
	}
}

func truncate(b []byte) []byte {
	if len(b) > 4<<10 {
		b = b[:4<<10]
	}
	return bytes.Clone(b)
}
