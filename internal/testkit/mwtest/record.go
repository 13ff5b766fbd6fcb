package mwtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
)

// RecordingTransport records every exchange of the clients, as the client sent and
// received it.
type RecordingTransport struct {
	Base    http.RoundTripper
	Discard bool // record nothing
	mu      sync.Mutex
	log     []*WireExchange
}

// WireExchange is one exchange a client made: its request and the answer it read.
type WireExchange struct {
	Method, Path string
	ReqHeader    http.Header
	ReqBody      []byte
	Status       int
	Header       http.Header
	RespBody     *testkit.Buffer
}

// RoundTrip records req and its answer, whose body is copied as the client reads it.
func (rt *RecordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.Discard {
		return rt.Base.RoundTrip(req)
	}
	x := &WireExchange{Method: req.Method, Path: req.URL.Path, ReqHeader: req.Header.Clone(), RespBody: &testkit.Buffer{}}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		x.ReqBody = body
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := rt.Base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	x.Status, x.Header = resp.StatusCode, resp.Header.Clone()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, x.RespBody), resp.Body}
	rt.mu.Lock()
	rt.log = append(rt.log, x)
	rt.mu.Unlock()
	return resp, nil
}

// Exchanges returns the exchanges recorded so far.
func (rt *RecordingTransport) Exchanges() []*WireExchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]*WireExchange(nil), rt.log...)
}

// Last returns the last exchange recorded.
func (rt *RecordingTransport) Last() *WireExchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.log) == 0 {
		return nil
	}
	return rt.log[len(rt.log)-1]
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// InnerRecorder records what the wrapped handler received and wrote.
type InnerRecorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []*InnerExchange
}

// InnerExchange is one request the wrapped handler served, and what it wrote.
type InnerExchange struct {
	Method, Path string
	ReqBody      []byte
	Wrapped      bool // the ResponseWriter was not net/http's own
	RespBody     *testkit.Buffer
}

// ServeHTTP records r and passes it on.
func (ir *InnerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &InnerExchange{Method: r.Method, Path: r.URL.Path, RespBody: &testkit.Buffer{}}
	x.Wrapped = !strings.HasPrefix(typeName(w), "*http.")
	body, _ := io.ReadAll(r.Body)
	x.ReqBody = body
	r.Body = io.NopCloser(bytes.NewReader(body))
	ir.mu.Lock()
	ir.log = append(ir.log, x)
	ir.mu.Unlock()
	ir.next.ServeHTTP(&teeWriter{ResponseWriter: w, tee: x.RespBody}, r)
}

// Exchanges returns the exchanges recorded so far.
func (ir *InnerRecorder) Exchanges() []*InnerExchange {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	return append([]*InnerExchange(nil), ir.log...)
}

// teeWriter copies what is written to tee; it flushes and unwraps.
type teeWriter struct {
	http.ResponseWriter
	tee io.Writer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.tee.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServedRecorder records what the handler it wraps (the middleware) answered each
// request, in the order the requests came.
type ServedRecorder struct {
	next http.Handler
	mu   sync.Mutex
	log  []*ServedAnswer
}

// ServedAnswer is what the middleware answered one request.
type ServedAnswer struct {
	Path   string
	mu     sync.Mutex
	status int
	Body   *testkit.Buffer
	Left   chan struct{} // closed when the request's context ends (its client left, or it was answered)
}

// Code returns the status answered, 0 when nothing was.
func (a *ServedAnswer) Code() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status
}

// ServeHTTP records the answer to r as the handler writes it.
func (sr *ServedRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == a2asrv.WellKnownAgentCardPath {
		// The middleware's own read of the card (its tenant routes learn the
		// HTTP+JSON mounts) is not an answer to a send.
		sr.next.ServeHTTP(w, r)
		return
	}
	a := &ServedAnswer{Path: r.URL.Path, Body: &testkit.Buffer{}, Left: make(chan struct{})}
	context.AfterFunc(r.Context(), func() { close(a.Left) })
	sr.mu.Lock()
	sr.log = append(sr.log, a)
	sr.mu.Unlock()
	sr.next.ServeHTTP(&statusWriter{teeWriter: teeWriter{ResponseWriter: w, tee: a.Body}, a: a}, r)
}

// Answers returns the answers recorded so far.
func (sr *ServedRecorder) Answers() []*ServedAnswer {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return append([]*ServedAnswer(nil), sr.log...)
}

// statusWriter is a teeWriter that records the status.
type statusWriter struct {
	teeWriter
	a *ServedAnswer
}

func (w *statusWriter) WriteHeader(code int) {
	w.a.mu.Lock()
	if w.a.status == 0 && code >= 200 {
		w.a.status = code
	}
	w.a.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.a.mu.Lock()
	if w.a.status == 0 {
		w.a.status = http.StatusOK
	}
	w.a.mu.Unlock()
	return w.teeWriter.Write(p)
}
