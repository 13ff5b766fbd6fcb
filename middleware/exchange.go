package middleware

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/a2akit/idempotency"
)

// exchange is one keyed send on its way through the HTTP middleware: the core's
// decision, acted on in the shape of the send's dialect.
type exchange struct {
	c core
	w http.ResponseWriter
	r *http.Request
	s *send
	k claimKey
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
)

// run checks the send, asks the core what to do with it and does it.
func (x *exchange) run(m *middleware) {
	s := x.s
	if s.keyErr != nil {
		x.refuse(&failure{kind: failInvalidParams, message: s.keyErr.Error()}, true)
		return
	}
	if s.messageID == "" {
		x.refuse(&failure{kind: failInvalidParams, message: msgNoMessageID}, true)
		return
	}
	if !m.honours(x.r.Context()) {
		x.refuse(&failure{kind: failUnsupported, message: msgCannotHonour}, false)
		return
	}
	scope, err := m.scope(x.r, s.tenant)
	if err != nil {
		x.refuse(&failure{kind: failInvalidParams, message: err.Error()}, true)
		return
	}
	x.k = claimKey{scope: scope, key: s.key, messageID: s.messageID}

	d := x.c.decide(x.r.Context(), x.k)
	switch d.kind {
	case decideForward:
		x.forward(d.token)
	case decideReplay:
		x.replay(d.rec)
	case decideConflict:
		x.conflict()
	case decideInFlight:
		x.inFlight(d.rec)
	case decideUnavailable:
		x.unavailable(d.op, d.err)
	case decideGone:
		x.observe(OutcomeInFlight)
	}
}

// refuse answers a keyed send that the middleware will not run. ext says whether the
// answer names the extension in A2A-Extensions (not when keys cannot be honoured).
func (x *exchange) refuse(f *failure, ext bool) {
	x.logAttrs(slog.LevelDebug, "idempotency: keyed send refused", slog.String("reason", f.message))
	writeFailure(x.w, x.s.d, x.s, f, ext)
	x.observe(OutcomeRefused)
}

func (x *exchange) conflict() {
	x.logAttrs(slog.LevelInfo, "idempotency: key reused by a different message, send refused")
	writeFailure(x.w, x.s.d, x.s, &failure{kind: failInvalidParams, message: msgAlreadyHeld}, true)
	x.observe(OutcomeConflict)
}

func (x *exchange) unavailable(op string, err error) {
	if x.r.Context().Err() != nil {
		// The client went away while the index was asked: not the index's fault.
		x.logAttrs(slog.LevelInfo, "idempotency: client went away during the index "+op+", keyed send not run", slog.Any("error", err))
		x.observe(OutcomeUnavailable)
		return
	}
	x.logAttrs(slog.LevelWarn, "idempotency: index "+op+" failed, keyed send refused (fail closed)", slog.Any("error", err))
	writeFailure(x.w, x.s.d, x.s, unavailableFailure(), true)
	x.observe(OutcomeUnavailable)
}

// unavailableFailure is the 503 of a keyed send refused for want of the index.
func unavailableFailure() *failure {
	return &failure{kind: failUnavailable, message: msgUnavailable, retryAfter: defaultRetryAfter}
}

// maxInFlightRetryAfter caps the Retry-After of a 409: the lease may have minutes
// left, but the first attempt usually makes its task known long before, and a retry
// then gets it.
const maxInFlightRetryAfter = 10 * time.Second

// inFlight answers 409: the first attempt is still running and its task is unknown.
// Retry-After is the time left on its lease (when the retry may take it over), capped
// at maxInFlightRetryAfter; the log shows both.
func (x *exchange) inFlight(rec idempotency.Record) {
	left := time.Until(rec.LeaseExpiresAt)
	retry := max(min(left, maxInFlightRetryAfter), time.Second)
	x.logAttrs(slog.LevelInfo, "idempotency: first attempt still in flight, retry answered 409",
		slog.Duration("lease_left", left.Round(time.Millisecond)), slog.Duration("retry_after", retry))
	writeFailure(x.w, x.s.d, x.s, &failure{kind: failInFlight, message: msgInFlight, retryAfter: retry}, true)
	x.observe(OutcomeInFlight)
}

// observe reports the outcome of the keyed send to Options.Observe.
func (x *exchange) observe(o Outcome) {
	if fn := x.c.observe; fn != nil {
		fn(Event{Outcome: o, Binding: x.s.d.framing(), Version: x.s.d.version(), Streaming: x.s.streaming, Scope: x.k.scope})
	}
}

// logAttrs logs msg with the exchange's attributes and extra. The key is redacted
// in every record above debug level.
func (x *exchange) logAttrs(level slog.Level, msg string, extra ...slog.Attr) {
	log := x.c.log
	ctx := x.r.Context()
	if !log.Enabled(ctx, level) {
		return
	}
	key := idempotency.RedactKey(x.s.key)
	if level <= slog.LevelDebug {
		key = x.s.key
	}
	attrs := append([]slog.Attr{
		slog.String("binding", string(x.s.d.framing())),
		slog.String("version", string(x.s.d.version())),
		slog.Bool("streaming", x.s.streaming),
		slog.String("scope", x.k.scope),
		slog.String("key", key),
	}, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

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
// an internal error.
func writeProduct(w http.ResponseWriter, s *send, p product) {
	body, err := s.d.product(s, p)
	if err != nil {
		writeFailure(w, s.d, s, &failure{kind: failInternal, message: "the key's task or reply could not be answered: " + err.Error()}, true)
		return
	}
	addExtensionHeaders(w.Header(), s.d)
	writeAnswer(w, http.StatusOK, body, s.streaming)
}

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
