package middleware

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
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

// earlyBinder is what the handlers of one New know about early binding.
type earlyBinder struct {
	mode EarlyBind
	// bindsItself is set once code behind the middleware bound a key (the adapter).
	bindsItself atomic.Bool
	// streams is what the last agent card served said about streaming, or false
	// since the server answered a streaming send without a stream.
	streams atomic.Bool
	// refused is when the server last answered a streaming send without a stream;
	// EarlyBindAlways tries again after noStreamBackoff.
	refused atomic.Int64
}

// noStreamBackoff is how long EarlyBindAlways forwards sends as sent after the
// server answered a streaming send without a stream.
const noStreamBackoff = time.Minute

// sawCard records what an agent card the middleware served says about streaming.
func (e *earlyBinder) sawCard(card []byte) {
	var c struct {
		Capabilities struct {
			Streaming bool `json:"streaming"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(card, &c) == nil {
		e.streams.Store(c.Capabilities.Streaming)
	}
}

// wants reports whether a keyed unary send is to be forwarded in its streaming form.
func (e *earlyBinder) wants() bool {
	if e.bindsItself.Load() {
		return false
	}
	switch e.mode {
	case EarlyBindAuto:
		return e.streams.Load()
	case EarlyBindAlways:
		return time.Since(time.Unix(0, e.refused.Load())) >= noStreamBackoff
	}
	return false
}

// didNotStream records that the server answered a streaming send without a stream.
func (e *earlyBinder) didNotStream() {
	e.streams.Store(false)
	e.refused.Store(time.Now().UnixNano())
}

// streamingDialect is a dialect that can turn its unary send into a streaming one.
type streamingDialect interface {
	dialect
	// streamingSend returns the streaming form of s, the unary send r whose body is
	// body, for the wrapped handler.
	streamingSend(r *http.Request, s *send, body []byte) *http.Request
}

func (rest10) streamingSend(r *http.Request, s *send, body []byte) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+restStreamSuffix, ""
	return derivedRequest(r, http.MethodPost, u, body, "text/event-stream")
}

func (jsonrpc10) streamingSend(r *http.Request, _ *send, body []byte) *http.Request {
	var call map[string]json.RawMessage
	if json.Unmarshal(body, &call) != nil {
		return nil
	}
	for k := range call {
		if strings.EqualFold(k, "method") {
			delete(call, k)
		}
	}
	call["method"] = json.RawMessage(`"` + methodSendStreamingMessage + `"`)
	out, err := json.Marshal(call)
	if err != nil {
		return nil
	}
	return derivedRequest(r, http.MethodPost, *r.URL, out, "text/event-stream")
}

// returnsImmediately reports whether the send asks not to wait for the run
// (configuration.returnImmediately), read leniently from body: such a send is
// answered at once and gains nothing from early binding.
func returnsImmediately(d dialect, body []byte) bool {
	type config struct {
		Configuration struct {
			ReturnImmediately json.RawMessage `json:"returnImmediately"`
		} `json:"configuration"`
	}
	var c config
	if _, ok := d.(jsonrpc10); ok {
		var call struct {
			Params config `json:"params"`
		}
		_ = json.Unmarshal(body, &call)
		c = call.Params
	} else {
		_ = json.Unmarshal(body, &c)
	}
	return bytes.Equal(bytes.TrimSpace(c.Configuration.ReturnImmediately), []byte("true"))
}

// earlySend returns the streaming form of the keyed unary send x, when it is to be
// forwarded so, or nil.
func (x *exchange) earlySend() *http.Request {
	if x.s.streaming || !x.c.early.wants() {
		return nil
	}
	sd, ok := x.s.d.(streamingDialect)
	if !ok || returnsImmediately(x.s.d, x.body) {
		return nil
	}
	return sd.streamingSend(x.r, x.s, x.body)
}

// forwardEarly forwards req, the streaming form of the claimed unary send x, binds
// the key at its first event and, when the stream ends, answers the client in the
// unary shape it asked for: the task as it is then (read as a retry reads it), or
// the Message, or the error the stream started with. It reports false, having
// written nothing, when the server did not answer with a stream and nothing bound
// the key: the send is then to be forwarded as it was sent.
func (x *exchange) forwardEarly(req *http.Request, st *settler) (Outcome, bool) {
	ew := &earlyWriter{header: make(http.Header), st: st}
	x.c.next.ServeHTTP(ew, req)
	if !ew.stream {
		if hooked, bound := st.cs.state(); !bound && !hooked {
			x.c.logSend(x.r.Context(), &x.ks, slog.LevelInfo, "idempotency: the server did not answer a streaming send though its card says "+
				"it streams; keyed sends are forwarded as sent", slog.Int("status", ew.status))
			x.c.early.didNotStream()
			return "", false
		}
		// Bound by the code behind: pass the answer on as it came.
		st.settle(x.s.d.sendCarry(ew.status, ew.body.Bytes()))
		h := x.w.Header()
		for k, v := range ew.header {
			h[k] = v
		}
		addExtensionHeaders(h, x.s.d)
		x.w.WriteHeader(ew.status)
		x.w.Write(ew.body.Bytes())
		return st.outcome, true
	}
	if !ew.first {
		data, _, ok := ew.scan.scan(ew.held, true)
		c := carry{}
		if ok {
			c = x.s.d.eventCarry(data)
		}
		ew.firstCarry = c
		st.settle(c)
	}
	c := ew.firstCarry
	o := st.outcome // what the client gets, when it gets the answer settle read
	switch b, bound := st.cs.Bound(); {
	case x.r.Context().Err() != nil:
		// No one to answer.
		o = OutcomeAbandoned
	case c.kind == carryError && st.cs.hookFailed():
		// The code behind could not bind the key, so the agent did not run: fail
		// closed as a unary send does (see heldBackWriter).
		writeFailure(x.w, x.s.d, x.s, x.c.notBoundBehind(x.r.Context(), &x.ks), true)
		return OutcomeUnavailable, true
	case c.kind == carryError:
		f := c.fail
		if f == nil {
			f = &failure{kind: failInternal, message: "the server's stream for this send failed before its first event"}
		}
		writeFailure(x.w, x.s.d, x.s, f, true)
	case bound && b.Reply != nil:
		if !x.writeProduct(product{message: b.Reply}) {
			o = OutcomeInternal
		}
	case c.kind == carryTask || c.kind == carryUpdate:
		// The task as it is now, read as a retry reads it: a first send answered
		// with it is claimed; otherwise the client got what the read answered.
		if r := x.answerTask(idempotency.Record{MessageID: x.s.messageID, TaskID: c.taskID, ClaimedAt: time.Now()}); r != OutcomeReplayed {
			o = r
		}
	case c.kind == carryMessage:
		if !x.writeProduct(product{message: c.message}) {
			o = OutcomeInternal
		}
	default:
		writeFailure(x.w, x.s.d, x.s, &failure{kind: failInFlight, message: msgInFlight, retryAfter: time.Second}, true)
		o = OutcomeInFlight
	}
	return o, true
}

// earlyWriter is the ResponseWriter of a send forwarded in its streaming form. It
// answers no one: it settles the send at the stream's first event and drops the
// rest; an answer that is not a stream is kept for forwardEarly.
type earlyWriter struct {
	header http.Header
	st     *settler
	status int
	stream bool
	body   bytes.Buffer // an answer that is not a stream

	held       []byte
	scan       eventScanner
	first      bool // the first event was read
	firstCarry carry
}

func (ew *earlyWriter) Header() http.Header { return ew.header }

func (ew *earlyWriter) WriteHeader(code int) {
	if ew.status != 0 || code < 200 {
		return
	}
	ew.status = code
	ew.st.status = code
	ew.stream = code == http.StatusOK && isEventStream(ew.header)
}

func (ew *earlyWriter) Write(p []byte) (int, error) {
	if ew.status == 0 {
		ew.WriteHeader(http.StatusOK)
	}
	switch {
	case !ew.stream:
		if ew.body.Len()+len(p) > maxAnswerCopy {
			return 0, errAnswerTooLarge
		}
		return ew.body.Write(p)
	case ew.first:
		return len(p), nil
	}
	ew.held = append(ew.held, p...)
	if data, _, ok := ew.scan.scan(ew.held, false); ok {
		ew.first, ew.held = true, nil
		ew.firstCarry = ew.st.d.eventCarry(data)
		ew.st.settle(ew.firstCarry)
	} else if len(ew.held) > maxEventBytes {
		ew.first, ew.held = true, nil
		ew.st.settle(carry{})
	}
	return len(p), nil
}

// Flush does nothing: the answer is written when the stream ends.
func (ew *earlyWriter) Flush() {}
