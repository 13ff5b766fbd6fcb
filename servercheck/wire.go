package servercheck

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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

// get sends a GET (the card, a task list) and reads the answer. version, when not
// empty, is sent as A2A-Version (a v1.0 server may read a request without it as
// v0.3).
func (c *client) get(ctx context.Context, u, version string) (*answer, error) {
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
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
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
