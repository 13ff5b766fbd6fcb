package servercheck

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// send is one SendMessage or SendStreamingMessage the checker makes.
type send struct {
	iface     Interface
	stream    bool
	messageID string
	contextID string
	text      string
	// key is the value of the metadata entry: nil sends no entry (unkeyed), a string
	// a key, anything else a key that is not a string.
	key any
	// headerKey, when not empty, is sent as the Idempotency-Key request header.
	headerKey string
}

// keyed reports whether the send carries a key in either carrier.
func (s send) keyed() bool { return s.key != nil || s.headerKey != "" }

// kind is what an answer, or one event of a stream, carried.
type kind int

const (
	kindNone    kind = iota // nothing the checker recognises
	kindTask                // a task
	kindMessage             // a Message reply
	kindUpdate              // a status or artifact update of a task
	kindError               // a JSON-RPC error, or an HTTP+JSON error body
)

func (k kind) String() string {
	return [...]string{"nothing recognisable", "a task", "a Message", "a task update", "an error"}[k]
}

// outcome is what one unary answer or one event carried.
type outcome struct {
	kind kind
	// taskID and state: of a task or an update (state normalised: "completed",
	// "working", ...).
	taskID, state string
	// messageID and text: of a Message reply.
	messageID, text string
	// code (JSON-RPC code, or the HTTP+JSON body's code), status (google.rpc.Status
	// status), reason (ErrorInfo reason) and message: of an error.
	code               int
	grpcStatus, reason string
	message            string
	rpcID              string // the JSON-RPC response's id, as JSON text
	hasRPCEnvelope     bool
	unrecognisedRaw    string
}

// answer is what came back for a send.
type answer struct {
	outcome // the unary answer, or the first event of a stream
	ex      *Exchange
	err     error // a transport failure: no HTTP answer
	status  int
	header  http.Header
	sse     bool
	events  []outcome // a stream's events, the first included
	body    []byte
	reqID   string // the JSON-RPC request's id, as JSON text
	elapsed time.Duration
}

// last returns the last event of a stream (or the unary outcome).
func (a *answer) last() outcome {
	if len(a.events) > 0 {
		return a.events[len(a.events)-1]
	}
	return a.outcome
}

// describe says in a few words what came back.
func (a *answer) describe() string {
	switch {
	case a.err != nil:
		return "no answer (" + a.err.Error() + ")"
	case a.kind == kindTask:
		return fmt.Sprintf("task %s (%s)", a.taskID, a.state)
	case a.kind == kindMessage:
		return "Message " + a.messageID
	case a.kind == kindError:
		s := fmt.Sprintf("HTTP %d, error %d", a.status, a.code)
		if a.grpcStatus != "" {
			s += " " + a.grpcStatus
		}
		if a.reason != "" {
			s += " reason " + a.reason
		}
		return s + ": " + strconv.Quote(cut(a.message, 160))
	}
	return fmt.Sprintf("HTTP %d with %s", a.status, a.kind)
}

// newID returns a fresh random identifier: prefix and 16 random bytes in hex.
func newID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// request builds the HTTP request of s, and returns the JSON-RPC request id (JSON
// text) when the binding is JSON-RPC.
func (c *client) request(ctx context.Context, s send) (*http.Request, string, error) {
	msg := map[string]any{"messageId": s.messageID}
	if s.contextID != "" {
		msg["contextId"] = s.contextID
	}
	v03 := s.iface.Version == "0.3"
	switch {
	case !v03:
		msg["role"] = "ROLE_USER"
		msg["parts"] = []any{map[string]any{"text": s.text}}
	case s.iface.Binding == BindingJSONRPC:
		msg["kind"] = "message"
		msg["role"] = "user"
		msg["parts"] = []any{map[string]any{"kind": "text", "text": s.text}}
	default: // HTTP+JSON v0.3: proto JSON
		msg["role"] = "ROLE_USER"
		msg["content"] = []any{map[string]any{"text": s.text}}
	}
	if s.key != nil {
		msg["metadata"] = map[string]any{idempotency.MetadataKey: s.key}
		msg["extensions"] = []string{idempotency.ExtensionURI}
	}
	params := map[string]any{"message": msg}
	if s.iface.Tenant != "" && !v03 {
		params["tenant"] = s.iface.Tenant
	}
	var body any = params
	target := s.iface.URL
	reqID := ""
	if s.iface.Binding == BindingJSONRPC {
		method := map[[2]bool]string{{false, false}: "SendMessage", {false, true}: "SendStreamingMessage",
			{true, false}: "message/send", {true, true}: "message/stream"}[[2]bool{v03, s.stream}]
		id := newID("check-")
		reqID = strconv.Quote(id)
		body = map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
	} else {
		op := "/message:send"
		if s.stream {
			op = "/message:stream"
		}
		switch {
		case v03:
			target = strings.TrimSuffix(target, "/") + "/v1" + op
		case s.iface.Tenant != "":
			target = strings.TrimSuffix(target, "/") + "/" + url.PathEscape(s.iface.Tenant) + op
		default:
			target = strings.TrimSuffix(target, "/") + op
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(b))
	if err != nil {
		return nil, "", err
	}
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if s.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if !v03 {
		req.Header.Set("A2A-Version", "1.0")
	}
	if s.keyed() {
		req.Header.Set("A2A-Extensions", idempotency.ExtensionURI)
		if v03 {
			req.Header.Set("X-A2A-Extensions", idempotency.ExtensionURI)
		}
	}
	if s.headerKey != "" {
		req.Header.Set("Idempotency-Key", s.headerKey)
	}
	return req, reqID, nil
}

// maxBody bounds what the checker reads of an answer.
const maxBody = 1 << 20

// do sends s and reads its answer. For a stream, onEvent (when not nil) sees each
// event as it arrives; when it returns false the checker closes the stream.
func (c *client) do(ctx context.Context, s send, onEvent func(outcome) bool) *answer {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, reqID, err := c.request(ctx, s)
	if err != nil {
		return &answer{err: err, ex: &Exchange{Request: "(not built: " + err.Error() + ")"}}
	}
	reqText := requestText(req)
	a := &answer{reqID: reqID, ex: &Exchange{Request: reqText}}
	if err := c.take(); err != nil {
		a.err = err
		a.ex.Response = "(not sent: " + err.Error() + ")"
		return a
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		a.err = err
		a.elapsed = time.Since(start)
		a.ex.Response = "(no answer: " + err.Error() + ")"
		a.ex.Elapsed = a.elapsed.Milliseconds()
		return a
	}
	defer resp.Body.Close()
	a.status, a.header = resp.StatusCode, resp.Header
	var raw bytes.Buffer
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.sse = true
		a.readStream(io.TeeReader(io.LimitReader(resp.Body, maxBody), &limitedWriter{&raw, 8 << 10}), s.iface.Binding, onEvent)
	} else {
		a.body, _ = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		raw.Write(a.body)
		a.outcome = classify(a.body, s.iface.Binding, a.status)
		a.events = []outcome{a.outcome}
	}
	a.elapsed = time.Since(start)
	a.ex.Response = responseText(resp, raw.Bytes())
	a.ex.Elapsed = a.elapsed.Milliseconds()
	return a
}

// readStream reads the events of an SSE answer.
func (a *answer) readStream(r io.Reader, binding string, onEvent func(outcome) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data []string
	flush := func() bool {
		if len(data) == 0 {
			return true
		}
		o := classify([]byte(strings.Join(data, "\n")), binding, 200)
		data = data[:0]
		if len(a.events) == 0 {
			a.outcome = o
		}
		a.events = append(a.events, o)
		return onEvent == nil || onEvent(o)
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if !flush() {
				return
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	flush()
}

// classify reads a unary answer's body, or one event's data, in either version and
// binding.
func classify(body []byte, binding string, status int) outcome {
	var o outcome
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		o.unrecognisedRaw = cut(string(body), 200)
		return o
	}
	if binding == BindingJSONRPC {
		if _, ok := top["jsonrpc"]; ok {
			o.hasRPCEnvelope = true
			o.rpcID = string(top["id"])
		}
		if e, ok := top["error"]; ok {
			readRPCError(&o, e)
			return o
		}
		if r, ok := top["result"]; ok {
			readResult(&o, r)
			return o
		}
		o.unrecognisedRaw = cut(string(body), 200)
		return o
	}
	if e, ok := top["error"]; ok {
		readRESTError(&o, e)
		return o
	}
	if status >= 400 {
		// Another shape of error: RFC 7807 problem details, say.
		var p struct {
			Title, Detail string
			Status        int
		}
		json.Unmarshal(body, &p)
		o.kind, o.code, o.message = kindError, status, strings.TrimSpace(p.Title+": "+p.Detail)
		return o
	}
	readResult(&o, body)
	return o
}

func readRPCError(o *outcome, raw json.RawMessage) {
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	json.Unmarshal(raw, &e)
	o.kind, o.code, o.message = kindError, e.Code, e.Message
	o.reason = reasonOf(e.Data)
}

func readRESTError(o *outcome, raw json.RawMessage) {
	var e struct {
		Code    int             `json:"code"`
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	json.Unmarshal(raw, &e)
	o.kind, o.code, o.grpcStatus, o.message = kindError, e.Code, e.Status, e.Message
	o.reason = reasonOf(e.Details)
}

// reasonOf returns the reason of the first ErrorInfo in a list of details (or in one
// detail object).
func reasonOf(raw json.RawMessage) string {
	var list []struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(raw, &list) != nil {
		var one struct {
			Reason string `json:"reason"`
		}
		json.Unmarshal(raw, &one)
		return one.Reason
	}
	for _, d := range list {
		if d.Reason != "" {
			return d.Reason
		}
	}
	return ""
}

// wireTask holds what the checker reads of a task, a Message and an update, in v1.0
// and v0.3 shapes.
type wireObject struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	TaskID    string `json:"taskId"`
	MessageID string `json:"messageId"`
	Status    *struct {
		State string `json:"state"`
	} `json:"status"`
	Parts   []struct{ Text string } `json:"parts"`
	Content []struct{ Text string } `json:"content"`
}

// readResult reads a SendMessage result or stream event: {"task":…}, {"message":…}
// ({"msg":…} in v0.3's HTTP+JSON), {"statusUpdate":…}, {"artifactUpdate":…}, or an
// object with v0.3's "kind".
func readResult(o *outcome, raw json.RawMessage) {
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		o.unrecognisedRaw = cut(string(raw), 200)
		return
	}
	var obj wireObject
	k := kindNone
	for name, v := range wrapped {
		switch strings.ToLower(name) {
		case "task":
			k = kindTask
		case "message", "msg":
			k = kindMessage
		case "statusupdate", "artifactupdate", "status_update", "artifact_update":
			k = kindUpdate
		default:
			continue
		}
		json.Unmarshal(v, &obj)
		break
	}
	if k == kindNone {
		json.Unmarshal(raw, &obj)
		switch {
		case obj.Kind == "task" || obj.Kind == "" && obj.ID != "" && obj.Status != nil:
			k = kindTask
		case obj.Kind == "message":
			k = kindMessage
		case obj.Kind == "status-update" || obj.Kind == "artifact-update":
			k = kindUpdate
		}
	}
	o.kind = k
	switch k {
	case kindTask:
		o.taskID = obj.ID
	case kindUpdate:
		o.taskID = obj.TaskID
	case kindMessage:
		o.messageID = obj.MessageID
		for _, p := range append(obj.Parts, obj.Content...) {
			o.text += p.Text
		}
	default:
		o.unrecognisedRaw = cut(string(raw), 200)
	}
	if obj.Status != nil {
		o.state = normState(obj.Status.State)
	}
}

// normState spells a task state as v0.3 does: TASK_STATE_INPUT_REQUIRED and
// input-required are both "input-required".
func normState(s string) string {
	s = strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "TASK_STATE_"))
	return strings.ReplaceAll(s, "_", "-")
}

// finalState reports whether a task in state s has stopped: terminal, or
// interrupted (waiting for input or authorisation).
func finalState(s string) bool {
	switch s {
	case "completed", "failed", "canceled", "cancelled", "rejected", "input-required", "auth-required":
		return true
	}
	return false
}

// requestText renders a request for an Exchange.
func requestText(req *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", req.Method, req.URL)
	for _, h := range []string{"Content-Type", "Accept", "A2A-Version", "A2A-Extensions", "Idempotency-Key"} {
		if v := req.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	if req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(body)
			b.WriteString("\n" + cut(string(raw), 2048))
		}
	}
	return b.String()
}

// responseText renders an answer for an Exchange.
func responseText(resp *http.Response, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	for _, h := range []string{"Content-Type", "A2A-Extensions", "Idempotent-Replayed", "Retry-After"} {
		for _, v := range resp.Header.Values(h) {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	b.WriteString("\n" + cut(string(body), 4096))
	return b.String()
}

// cut shortens s to n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// get sends a GET (the card, a task list) and reads the answer.
func (c *client) get(ctx context.Context, u string) (*answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Accept", "application/json")
	if err := c.take(); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: body, ex: &Exchange{
		Request: requestText(req), Response: responseText(resp, body), Elapsed: time.Since(start).Milliseconds(),
	}}, nil
}

// How cutSend loses the send.
type cutMode int

const (
	cutAfterRequest cutMode = iota // the whole request written, the answer never read
	cutMidBody                     // half the body written
)

// cutSend sends s on a connection of its own and closes the connection: after the
// whole request (the answer is lost), or in the middle of the body.
func (c *client) cutSend(ctx context.Context, s send, mode cutMode) *answer {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	req, reqID, err := c.request(ctx, s)
	a := &answer{reqID: reqID, ex: &Exchange{}}
	if err != nil {
		a.err = err
		return a
	}
	a.ex.Request = requestText(req)
	if err := c.take(); err != nil {
		a.err = err
		a.ex.Response = "(not sent: " + err.Error() + ")"
		return a
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		a.err = err
		return a
	}
	raw := wire.Bytes()
	how := "closed the connection right after writing the whole request, without reading the answer"
	if mode == cutMidBody {
		raw = raw[:len(raw)-int(req.ContentLength)/2]
		how = "closed the connection after writing half the body"
	}
	conn, err := dial(ctx, req.URL)
	if err != nil {
		a.err = err
		a.ex.Response = "(no connection: " + err.Error() + ")"
		return a
	}
	_, err = conn.Write(raw)
	if err == nil && mode == cutAfterRequest {
		// Long enough for the server to read the request and start on it.
		time.Sleep(20 * time.Millisecond)
	}
	conn.Close()
	if err != nil {
		a.err = err
		a.ex.Response = "(write failed: " + err.Error() + ")"
		return a
	}
	a.ex.Response = "(the checker " + how + ")"
	return a
}

// dial opens a connection to the host of u, with TLS for https.
func dial(ctx context.Context, u *url.URL) (net.Conn, error) {
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host += ":443"
		} else {
			host += ":80"
		}
	}
	if u.Scheme == "https" {
		d := &tls.Dialer{Config: &tls.Config{ServerName: u.Hostname()}}
		return d.DialContext(ctx, "tcp", host)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", host)
}

// post sends a JSON-RPC call other than a send (ListTasks) and reads the answer.
func (c *client) post(ctx context.Context, u string, call any) *answer {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	a := &answer{ex: &Exchange{}}
	b, err := json.Marshal(call)
	if err != nil {
		a.err = err
		return a
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		a.err = err
		return a
	}
	for k, vs := range c.opts.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	a.ex.Request = requestText(req)
	if err := c.take(); err != nil {
		a.err = err
		return a
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer resp.Body.Close()
	a.status, a.header = resp.StatusCode, resp.Header
	a.body, _ = io.ReadAll(io.LimitReader(resp.Body, maxBody))
	a.ex.Response, a.ex.Elapsed = responseText(resp, a.body), time.Since(start).Milliseconds()
	return a
}
