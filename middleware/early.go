package middleware

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware/internal/member"
)

// EarlyBind says whether the middleware forwards a keyed blocking SendMessage as a
// SendStreamingMessage, to learn its task from the first event instead of from the
// answer at the end of the run. See the package documentation, "Servers the kit
// cannot see inside".
type EarlyBind int

const (
	// EarlyBindAuto (the default) forwards a keyed blocking unary send of A2A v1.0
	// as a streaming send when the last agent card the middleware served says
	// capabilities.streaming (the middleware makes no request of its own for it: a
	// client that resolves the card, or the operator's own read of it through the
	// middleware, shows it), and nothing behind the middleware binds keys itself (the
	// a2a-go adapter binds before the agent runs, which makes this unneeded). The key
	// is bound at the stream's first event, and the client gets the unary answer it
	// asked for when the run ends.
	EarlyBindAuto EarlyBind = iota
	// EarlyBindAlways does the same whatever the card says: for servers that stream
	// but whose card the clients do not read through the middleware.
	EarlyBindAlways
	// EarlyBindOff forwards every send as the client sent it.
	EarlyBindOff
)

// earlyBinder is what the handlers of one New know about early binding: what the
// card says, and, per endpoint (a JSON-RPC path, an HTTP+JSON prefix), when the
// server last answered a streaming form with a definite "I do not stream" (405, 501,
// method not found, unsupported operation). Nothing else turns it off: one client's
// error says nothing about streaming.
type earlyBinder struct {
	mode EarlyBind
	// bindsItself is set once code behind the middleware bound a key (the adapter).
	bindsItself atomic.Bool
	// streams is what the last agent card served said about streaming.
	streams atomic.Bool

	mu      sync.Mutex
	refused map[string]time.Time // by endpoint; cleared when a card is served
}

// noStreamBackoff is how long EarlyBindAlways forwards sends to an endpoint as sent
// after it answered a streaming form with a definite "I do not stream".
const noStreamBackoff = time.Minute

// maxRefusedEndpoints bounds the endpoints remembered (paths are the clients').
const maxRefusedEndpoints = 1024

// sawCard records what an agent card the middleware served says about streaming.
func (e *earlyBinder) sawCard(card []byte) {
	var c struct {
		Capabilities struct {
			Streaming bool `json:"streaming"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(card, &c) == nil {
		e.streams.Store(c.Capabilities.Streaming)
		if e.mode == EarlyBindAuto {
			e.mu.Lock()
			e.refused = nil
			e.mu.Unlock()
		}
	}
}

// wants reports whether a keyed unary send to endpoint is to be forwarded in its
// streaming form.
func (e *earlyBinder) wants(endpoint string) bool {
	if e.bindsItself.Load() {
		return false
	}
	switch e.mode {
	case EarlyBindAuto:
		if !e.streams.Load() {
			return false
		}
	case EarlyBindOff:
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.refused[endpoint]
	return !ok || e.mode == EarlyBindAlways && time.Since(at) >= noStreamBackoff
}

// doesNotStream records that endpoint answered a streaming form with a definite
// "I do not stream".
func (e *earlyBinder) doesNotStream(endpoint string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refused == nil || len(e.refused) >= maxRefusedEndpoints {
		e.refused = make(map[string]time.Time)
	}
	e.refused[endpoint] = time.Now()
}

// streamingDialect is a dialect that can turn its unary send into a streaming one.
type streamingDialect interface {
	dialect
	// streamingSend returns the streaming form of s, the unary send r whose body is
	// body, for the wrapped handler: only the method name or the path differs.
	streamingSend(r *http.Request, s *send, body []byte) *http.Request
	// endpoint names where s goes, for what early binding learns per endpoint.
	endpoint(r *http.Request, s *send) string
	// eventMembers reads the data of an event of a v1.0 stream: its members, or the
	// error it carries.
	eventMembers(data []byte) (streamMembers, *failure)
}

func (rest10) streamingSend(r *http.Request, s *send, body []byte) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+restStreamSuffix, ""
	return streamingRequest(r, u, body)
}

func (rest10) endpoint(_ *http.Request, s *send) string { return "rest " + s.prefix }

func (rest10) eventMembers(data []byte) (streamMembers, *failure) {
	if f := eventError(data); f != nil {
		return streamMembers{}, f
	}
	v, _ := readStreamMembers(data)
	return v, nil
}

func (jsonrpc10) streamingSend(r *http.Request, _ *send, body []byte) *http.Request {
	out, ok := renameMethod(body, methodSendStreamingMessage)
	if !ok {
		return nil
	}
	return streamingRequest(r, *r.URL, out)
}

func (jsonrpc10) endpoint(r *http.Request, _ *send) string { return "jsonrpc " + r.URL.Path }

func (jsonrpc10) eventMembers(data []byte) (streamMembers, *failure) {
	result, f := readResponse(data)
	if f != nil {
		return streamMembers{}, f
	}
	// result lies in data, which readResponse validated: one walk, no second scan;
	// the members are copied, as readStreamMembers copies them.
	v, _ := readValidStreamMembers(result)
	for _, m := range []*json.RawMessage{&v.Task, &v.Message, &v.StatusUpdate, &v.ArtifactUpdate} {
		*m = bytes.Clone(*m)
	}
	return v, nil
}

// streamingRequest returns r with URL u and body, asking for an event stream: every
// header but Accept is r's, and body is r's but for the method name.
func streamingRequest(r *http.Request, u url.URL, body []byte) *http.Request {
	d := r.Clone(r.Context())
	d.URL = &u
	d.RequestURI = u.RequestURI()
	d.Body = readCloser(body)
	d.ContentLength = int64(len(body))
	d.GetBody = func() (io.ReadCloser, error) { return readCloser(body), nil }
	if d.Header.Get("Content-Length") != "" {
		d.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	d.Header.Set("Accept", "text/event-stream")
	return d
}

// renameMethod returns the JSON-RPC call body with the value of its method member
// replaced by method, every other byte kept: the member encoding/json reads (the
// last whose name matches "method" as encoding/json matches names). A body that is
// not a valid JSON object is not renamed.
func renameMethod(body []byte, method string) ([]byte, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	o, ok := member.Members(body)
	if !ok {
		return nil, false
	}
	start, end := -1, -1
	for name, value, more := o.Next(); more; name, value, more = o.Next() {
		if member.NameIs(name, "method") {
			end = o.End()
			start = end - len(value)
		}
	}
	if start < 0 {
		return nil, false
	}
	out := make([]byte, 0, len(body)+len(method))
	out = append(out, body[:start]...)
	out = append(out, '"')
	out = append(out, method...)
	out = append(out, '"')
	return append(out, body[end:]...), true
}

// returnsImmediately reports whether the send asks not to wait for the run
// (configuration.returnImmediately), read leniently from body as json.Unmarshal into
// nested structs reads it (the last member of a name wins; a null or mistyped
// params or configuration changes nothing), by one walk: such a send is answered at
// once and gains nothing from early binding.
func returnsImmediately(d dialect, body []byte) bool {
	if !json.Valid(body) {
		return false
	}
	var last []byte
	config := func(params []byte) {
		each(params, "configuration", func(c []byte) {
			each(c, "returnImmediately", func(v []byte) { last = v })
		})
	}
	if _, ok := d.(jsonrpc10); ok {
		each(body, "params", config)
	} else {
		config(body)
	}
	return string(last) == "true"
}

// each calls f with the value of every member of the JSON object obj (valid JSON)
// that encoding/json decodes into a struct field named field, in order; nothing
// when obj is not an object.
func each(obj []byte, field string, f func(value []byte)) {
	o, ok := member.Members(obj)
	if !ok {
		return
	}
	for name, value, more := o.Next(); more; name, value, more = o.Next() {
		if member.NameIs(name, field) {
			f(value)
		}
	}
}

// earlySend returns the streaming form of the keyed unary send x, when it is to be
// forwarded so (never on the second claim of a send, after a definite "I do not
// stream"), or nil.
func (x *exchange) earlySend(early bool) *http.Request {
	sd, ok := x.s.d.(streamingDialect)
	if !early || x.s.streaming || !ok || !x.m.early.wants(sd.endpoint(x.r, x.s)) || returnsImmediately(x.s.d, x.body) {
		return nil
	}
	return sd.streamingSend(x.r, x.s, x.body)
}

// forwardEarly forwards req, the streaming form of the claimed unary send x, once:
// it binds the key at the stream's first event, folds the stream into the task as
// its events make it, and answers the client, when the stream ends, in the unary
// shape it asked for: that task, the agent's Message, or the error the stream began
// with. An answer that is not a stream is the send's answer: it settles the key by
// the rule of ambiguity and passes on as it came. Only a definite "I do not stream"
// (405, 501, method not found, unsupported operation, before anything was bound)
// reports again: nothing ran, and the claim is released.
func (x *exchange) forwardEarly(req *http.Request, st *settler) (o Outcome, again bool) {
	sd := x.s.d.(streamingDialect)
	ew := &earlyWriter{header: make(http.Header), st: st, d: sd}
	x.next.ServeHTTP(ew, req)
	cs := st.step.claim
	if !ew.stream {
		p := x.s.d.sendAnswer(ew.status, ew.body.Bytes())
		if ew.overflow {
			p = Produced{PastBound: ew.status >= 200 && ew.status < 300}
		}
		if hooked, bound := cs.state(); !hooked && !bound && p.Refused && refusesStreaming(ew.status, p.fail, ew.body.Bytes()) {
			return x.notStreaming(sd, st, ew.status), true
		}
		st.settle(p)
		h := x.w.Header()
		for k, v := range ew.header {
			h[k] = v
		}
		addExtensionHeaders(h, x.s.d)
		x.w.WriteHeader(ew.status)
		x.w.Write(ew.body.Bytes())
		return st.outcome, false
	}
	if !ew.first {
		// The stream ended before its first event was complete: a last event
		// without its blank line still counts, as for a2a-go's client.
		if data, _, ok := ew.scan.scan(ew.held, true); ok {
			ew.event(data)
		}
		if !ew.first {
			st.settle(Produced{})
		}
	}
	if hooked, bound := cs.state(); !hooked && !bound && ew.firstFail != nil && ew.firstFail.refuses &&
		refusesStreaming(http.StatusOK, ew.firstFail, nil) {
		return x.notStreaming(sd, st, ew.status), true
	}
	o = st.outcome // what the client gets, when it gets the answer settle read
	b, _ := cs.Bound()
	switch {
	case x.r.Context().Err() != nil:
		o = OutcomeAbandoned // no one to answer
	case st.notBound != nil:
		// The code behind could not bind the key, so the agent did not run: fail
		// closed as a unary send does (see heldBackWriter).
		writeFailure(x.w, x.s.d, x.s, st.notBound, true)
		return OutcomeUnavailable, false
	case ew.firstFail != nil:
		writeFailure(x.w, x.s.d, x.s, ew.firstFail, true)
	case len(b.Reply) > 0 && !bytes.Equal(b.Reply, unreplayableReply):
		// The code behind recorded the agent's reply: that record stands.
		if !x.writeProduct(product{message: b.Reply}) {
			o = OutcomeInternal
		}
	case ew.fold.reply != nil:
		if !x.writeProduct(product{message: ew.fold.reply}) {
			o = OutcomeInternal
		}
	case ew.fold.whole():
		if !x.writeProduct(x.shapedTask(ew.fold.task())) {
			o = OutcomeInternal
		}
	case ew.fold.taskID != "":
		// The task grew past what the middleware folds: read it as a retry does.
		rec := idempotency.Record{MessageID: x.s.messageID, TaskID: ew.fold.taskID, ClaimedAt: time.Now()}
		if r := x.answerTask(rec); r != OutcomeReplayed {
			o = r
		}
	default:
		// No event the middleware could read: what ran is unknown, and the key stays
		// pending (or bound to the unreplayable marker).
		writeFailure(x.w, x.s.d, x.s, &failure{kind: failUnknown, message: msgOutcomeUnknown}, true)
	}
	return o, false
}

// notStreaming settles a streaming form the endpoint refused as a protocol it does
// not serve: nothing ran, so the claim is released, and the endpoint gets sends as
// they were sent from now on.
func (x *exchange) notStreaming(sd streamingDialect, st *settler, status int) Outcome {
	x.c.logSend(x.r.Context(), &x.ks, slog.LevelInfo, "idempotency: the server does not serve streaming sends "+
		"at this endpoint; keyed sends to it are forwarded as sent", slog.Int("status", status))
	x.m.early.doesNotStream(sd.endpoint(x.r, x.s))
	st.settle(Produced{Refused: true})
	return st.outcome
}

// refusesStreaming reports whether an answer to a streaming form says the server does
// not serve streaming sends (rather than refusing this one): HTTP 405 or 501, a
// JSON-RPC method not found or unsupported operation, an HTTP+JSON UNIMPLEMENTED.
// f is the error the answer carried, body the answer when it was not a stream.
func refusesStreaming(status int, f *failure, body []byte) bool {
	if status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented {
		return true
	}
	if f != nil && f.status == http.StatusOK { // a JSON-RPC error object
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(f.raw, &e)
		return e.Code == -32601 || e.Code == codeUnsupported
	}
	if f != nil {
		body = f.raw
	}
	var e struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Status == "UNIMPLEMENTED"
}
