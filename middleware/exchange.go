package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/a2akit/idempotency"
)

// exchange is one keyed send on its way through the HTTP middleware: the engine's
// steps, acted on in the shape of the send's dialect.
type exchange struct {
	m    *middleware
	c    core
	next http.Handler // the wrapped handler
	w    http.ResponseWriter
	r    *http.Request
	s    *send
	ks   Send // what the engine knows of s
	k    claimKey
	// body is the request's body, as read.
	body []byte
	// first is set while the exchange forwards its claimed first send: what it
	// answers then is no replay.
	first bool
}

// Messages of the middleware's refusals; they say what to do.
const (
	msgNoMessageID = "a keyed send needs a message.messageId: the idempotency key is held by the message id, " +
		"and a retry resends the identical message"
	msgCannotHonour = "this server cannot honour the idempotency key (message metadata " + idempotency.MetadataKey +
		"), so it refused the send rather than run it without deduplication; send it without the key " +
		"to run it without deduplication"
	msgAlreadyHeld = "the idempotency key is already held by another message: a retry resends the identical message " +
		"(same messageId), so a different messageId means the key was reused across two distinct sends; " +
		"send this message with a fresh key"
	msgUnavailable = "the idempotency index is unavailable, so the keyed send was refused rather than run without " +
		"deduplication; retry with the same key and message after the Retry-After delay"
	msgInFlight = "the first send with this idempotency key is still in flight and its task is not known yet; " +
		"retry with the same key and message after the Retry-After delay"
	msgMaybeElsewhere = "the first send with this idempotency key is bound to a task that is not stored yet and " +
		"does not run on this server: it may still be starting on another server, or the server that ran it has " +
		"stopped; retry with the same key and message after the Retry-After delay (a task still missing when the " +
		"key's lease ends is reported as not found)"
	msgFull = "the idempotency index holds as many keys as it may for this tenant (or in all), so the keyed send " +
		"was refused rather than run without deduplication; keys leave it as their time to live ends: retry " +
		"after the Retry-After delay, or send the message without a key"
	msgUnreplayable = "the first send with this idempotency key ran, but what it produced is larger than this " +
		"server keeps for its retries, so it cannot be replayed; the agent is not run again for the same key: read " +
		"its task with GetTask if you know it, or send a new message with a fresh key"
	msgOutcomeUnknown = "the server's answer to this keyed send was cut off before it was known what ran; retry " +
		"with the same key and message: the retry gets the first attempt's task, or waits for it"
	msgIndexRefused = "the idempotency index cannot store this keyed send's tenant, messageId or taskId " +
		"(too long, or not UTF-8 text without NUL bytes); send it with shorter, plain-text ids"
)

// errAmbiguous refuses a body that the two bindings read as two sends (see route).
var errAmbiguous = errors.New("the request body reads both as an HTTP+JSON send and as a JSON-RPC call of another " +
	"send, one of them with an idempotency key; send one or the other")

// msgTooLong ends the refusal of a keyed send with a value past the index's bounds.
var msgTooLong = fmt.Sprintf("; with an idempotency key the tenant (the key's scope) is at most %d bytes, "+
	"the messageId at most %d and the taskId at most %d", idempotency.MaxScopeLength, idempotency.MaxMessageIDLength,
	idempotency.MaxTaskIDLength)

// run checks the send, asks the engine what to do with it and does it. A send is
// forwarded at most once per claim: only when its streaming form (early bind) was
// refused as a protocol the server does not serve, which certainly ran nothing and
// released the claim, is it claimed again and forwarded as it was sent.
func (x *exchange) run() {
	s := x.s
	x.ks = Send{Binding: s.d.framing(), Version: s.d.version(), Streaming: s.streaming,
		Key: s.key, KeyErr: s.keyErr, MessageID: s.messageID, TaskID: s.taskID,
		RequestID: requestID(x.r.Header.Get("X-Request-Id"))}
	if s.ambiguous {
		x.ks.KeyErr = errAmbiguous // refused as invalid, with its text
	}
	for early := true; ; early = false {
		step := x.m.sends.Begin(x.r.Context(), &x.ks, x.identify)
		x.k = x.ks.k
		switch {
		case step.Refusal != nil:
			if step.Refusal.FromFirstAttempt() {
				servedFromFirstAttempt(x.w.Header(), s.d)
			}
			writeFailure(x.w, s.d, s, failureOf(step.Refusal), step.Refusal.Extension)
		case step.Forward != nil:
			if x.forward(step, early) {
				continue
			}
		case !step.Gone:
			x.replay(step.Record)
		}
		return
	}
}

// failureOf returns the failure that answers r in a dialect's shape.
func failureOf(r *Refusal) *failure {
	kinds := map[RefusalKind]failKind{
		RefusedInvalid: failInvalidParams, RefusedUnsupported: failUnsupported, RefusedTaskNotFound: failTaskNotFound,
		RefusedUnavailable: failUnavailable, RefusedInFlight: failInFlight, RefusedExhausted: failExhausted,
		RefusedUnreplayable: failUnreplayable, RefusedInternal: failInternal,
	}
	return &failure{kind: kinds[r.Kind], reason: r.Reason, message: r.Message, retryAfter: r.RetryAfter}
}

// unavailableFailure is the 503 of a keyed send refused for want of the index.
func unavailableFailure() *failure {
	return &failure{kind: failUnavailable, message: msgUnavailable, retryAfter: defaultRetryAfter}
}

// observe reports the outcome of the keyed send to Options.Observe.
func (x *exchange) observe(o Outcome) { x.c.observeSend(&x.ks, o) }

// writeFailure answers s (nil for a request not read as a send) with f in dialect
// d's shape. ext names the extension in the dialect's extension headers.
func writeFailure(w http.ResponseWriter, d dialect, s *send, f *failure, ext bool) {
	status, body, sse := d.failure(s, f)
	h := w.Header()
	if ext {
		addExtensionHeaders(h, d)
	}
	if f.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(f.retryAfter)))
	}
	writeAnswer(w, status, body, sse)
}

// writeProduct answers s with p: the whole body of a non-streamed answer, or a
// stream of that one event. When p cannot be framed for s's dialect, the answer is
// an internal error, and writeProduct returns false.
func (x *exchange) writeProduct(p product) bool {
	w, s := x.w, x.s
	body, err := s.d.product(s, p)
	if err != nil {
		// The codec's error names what the task source returned: the log gets it, the
		// client an answer that says what to do.
		writeFailure(w, s.d, s, failureOf(x.m.sends.Unanswerable(&x.ks, err)), true)
		return false
	}
	if x.first {
		addExtensionHeaders(w.Header(), s.d)
	} else {
		servedFromFirstAttempt(w.Header(), s.d)
	}
	writeAnswer(w, http.StatusOK, body, s.streaming)
	return true
}

// servedFromFirstAttempt sets the headers of every answer served from a first
// attempt (a replay, an attach to its live events, its Message reply again, the
// news that its task is gone or that its reply cannot be replayed): the one place
// for them (see idempotency.ReplayedHeader). A first send's own answers, and
// refusals, name the extension only.
func servedFromFirstAttempt(h http.Header, d dialect) {
	addExtensionHeaders(h, d)
	h.Set(idempotency.ReplayedHeader, "true")
}

// msgUnanswerable answers a retry whose task or reply the server stores in a form the
// middleware cannot put in the retry's shape.
const msgUnanswerable = "the key's task or reply could not be answered: the server stores it in a form this " +
	"binding cannot carry; read the task with GetTask, or report this to the server's operator"

// writeAnswer writes body as the whole answer: one Server-Sent Event of a 200 stream
// when sse is set, or else a JSON body with status.
func writeAnswer(w http.ResponseWriter, status int, body []byte, sse bool) {
	if sse {
		writeEventHeaders(w)
		_ = writeEvent(w, body)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Response headers that name active extensions: A2A v1.0's, and the one of A2A v0.3.
const (
	extensionsHeader       = "A2A-Extensions"
	legacyExtensionsHeader = "X-A2A-Extensions"
)

// The extension headers of each version, in the canonical form http.Header keys
// them by, so that naming the extension on an answer allocates no key.
var (
	extensionHeaders10 = []string{http.CanonicalHeaderKey(extensionsHeader)}
	extensionHeaders03 = []string{http.CanonicalHeaderKey(extensionsHeader), http.CanonicalHeaderKey(legacyExtensionsHeader)}
)

// extensionHeaders returns the response headers that name the extension in
// version v.
func extensionHeaders(v ProtocolVersion) []string {
	if v == Version03 {
		return extensionHeaders03
	}
	return extensionHeaders10
}

// addExtensionHeaders lists the extension in the extension headers of dialect d,
// unless it is already there.
func addExtensionHeaders(h http.Header, d dialect) {
	for _, name := range extensionHeaders(d.version()) {
		if !slices.Contains(h.Values(name), idempotency.ExtensionURI) {
			h.Add(name, idempotency.ExtensionURI)
		}
	}
}

// errNotFound reports whether err from a TaskSource says the task does not exist.
func errNotFound(err error) bool { return errors.Is(err, ErrTaskNotFound) }
