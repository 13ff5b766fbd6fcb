package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// New returns the middleware that makes keyed sends idempotent in front of an A2A
// server, with index recording the claims. It validates opts once: a negative Lease,
// MaxBodyBytes or IndexTimeout is an error, and zero fields take their defaults.
//
// A nil index, or one that implements [idempotency.Honouring] and reports that it
// cannot honour keys, makes the middleware refuse keyed sends (unkeyed sends pass as
// before) and leave the agent card as it is.
func New(index idempotency.KeyIndex, opts Options) (func(http.Handler) http.Handler, error) {
	switch {
	case opts.Lease < 0:
		return nil, fmt.Errorf("middleware: negative Lease %v", opts.Lease)
	case opts.MaxBodyBytes < 0:
		return nil, fmt.Errorf("middleware: negative MaxBodyBytes %d", opts.MaxBodyBytes)
	case opts.IndexTimeout < 0:
		return nil, fmt.Errorf("middleware: negative IndexTimeout %v", opts.IndexTimeout)
	}
	if opts.Lease == 0 {
		opts.Lease = DefaultLease
	}
	if opts.ReplayWait == 0 {
		opts.ReplayWait = DefaultReplayWait
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.IndexTimeout == 0 {
		opts.IndexTimeout = DefaultIndexTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Scope == nil {
		opts.Scope = DefaultScope
	}
	m := &middleware{
		index:    index,
		opts:     opts,
		log:      opts.Logger,
		bindings: defaultBindings,
	}
	return func(next http.Handler) http.Handler { return &handler{m: m, next: next} }, nil
}

// DefaultScope is the [Options.Scope] used when none is set: the A2A tenant the
// request names (params.tenant, or the body's tenant on HTTP+JSON), so that a key
// sent over one binding and retried over the other is the same send.
//
// It cannot see a tenant that only the URL names: a server that takes the tenant from
// a REST path segment (a2a-go's NewTenantRESTHandler) while its clients leave the
// body's tenant empty needs [TenantPathScope] (or its own Scope), or else two tenants
// share one scope.
func DefaultScope(_ *http.Request, tenant string) (string, error) { return tenant, nil }

// TenantPathScope returns an [Options.Scope] for servers that mount a tenant-aware
// HTTP+JSON handler at mount, with the tenant as the first path segment after it
// (mount "/t" serves POST /t/{tenant}/message:send, as a2a-go's
// http.StripPrefix("/t", a2asrv.NewTenantRESTHandler("/{*}", h)) does). For sends
// under mount the scope is that segment, which is what such a server uses whatever
// the body says; for every other send it is the tenant the request names, so JSON-RPC
// and HTTP+JSON retries of one send meet in one scope.
func TenantPathScope(mount string) func(r *http.Request, tenant string) (string, error) {
	mount = strings.TrimSuffix(mount, "/") + "/"
	return func(r *http.Request, tenant string) (string, error) {
		prefix, _, ok := restSend(r)
		if !ok {
			return tenant, nil
		}
		rest, ok := strings.CutPrefix(prefix, mount)
		if !ok {
			return tenant, nil
		}
		if segment, _, _ := strings.Cut(rest, "/"); segment != "" {
			return segment, nil
		}
		return tenant, nil
	}
}

// defaultBindings are the dialects the middleware serves, in the order they are
// asked. v0.3's HTTP+JSON comes before v1.0's, which owns every path ending in
// /message:send (see rest03Binding for how the two are told apart); the JSON-RPC
// dialects own every other POST and tell each other apart by method name.
var defaultBindings = []binding{rest03Binding{}, restBinding{}, jsonrpcBinding{}, jsonrpc03Binding{}}

// middleware is what the handlers of one New share.
type middleware struct {
	index    idempotency.KeyIndex
	opts     Options
	log      *slog.Logger
	bindings []binding // asked in order
	waiters  notifier

	honour       atomic.Pointer[honourState]
	signedWarned atomic.Bool
}

// honourTTL is how long an answer of idempotency.Honouring is reused.
const honourTTL = time.Second

type honourState struct {
	ok bool
	at time.Time
}

// honours reports whether the index can honour keys. The answer of an index that
// implements idempotency.Honouring is reused for honourTTL.
func (m *middleware) honours(ctx context.Context) bool {
	if m.index == nil {
		return false
	}
	h, ok := m.index.(idempotency.Honouring)
	if !ok {
		return true
	}
	if st := m.honour.Load(); st != nil && time.Since(st.at) < honourTTL {
		return st.ok
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.IndexTimeout)
	defer cancel()
	ok = h.HonoursKeys(ctx)
	m.honour.Store(&honourState{ok: ok, at: time.Now()})
	return ok
}

// indexContext bounds an index call made for r. Calls after the wrapped handler ran
// (bind, release) must happen even when the client has gone, so they use detached.
func (m *middleware) indexContext(r *http.Request, detached bool) (context.Context, context.CancelFunc) {
	ctx := r.Context()
	if detached {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, m.opts.IndexTimeout)
}

// handler is the middleware around one wrapped handler.
type handler struct {
	m    *middleware
	next http.Handler
}

// Where A2A serves the public agent card: agentCardPath since A2A v0.3, and
// legacyAgentCardPath before, which v0.3 servers often still serve.
const (
	agentCardPath       = "/.well-known/agent-card.json"
	legacyAgentCardPath = "/.well-known/agent.json"
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == agentCardPath || r.URL.Path == legacyAgentCardPath):
		h.serveCard(w, r)
		return
	case r.Method != http.MethodPost:
		h.next.ServeHTTP(w, r)
		return
	}
	body, f := h.m.readBody(r)
	if f != nil {
		writeFailure(w, bindingFor(h.m.bindings, r), nil, f, false)
		return
	}
	if !mayCarryKey(body) {
		h.next.ServeHTTP(w, r)
		return
	}
	s := readSend(h.m.bindings, r, body)
	if s == nil || !s.keyed {
		h.next.ServeHTTP(w, r)
		return
	}
	x := &exchange{h: h, w: w, r: r, s: s}
	x.run()
}

// readBody reads r's body, up to MaxBodyBytes, and puts back a body that reads the
// same bytes, with a ContentLength to match.
func (m *middleware) readBody(r *http.Request) ([]byte, *failure) {
	limit := m.opts.MaxBodyBytes
	tooLarge := func() *failure {
		return &failure{kind: failTooLarge, message: fmt.Sprintf("the request body exceeds %d bytes, the limit of the "+
			"idempotency middleware; send a smaller request, or ask the operator to raise MaxBodyBytes", limit)}
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	var body []byte
	var err error
	switch {
	case r.Body == nil:
	case r.ContentLength > 0:
		// net/http ends the body at its declared length.
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	default:
		body, err = io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	if err != nil {
		return nil, &failure{kind: failUnreadable, message: "the request body could not be read: " + err.Error()}
	}
	if int64(len(body)) > limit {
		return nil, tooLarge()
	}
	r.Body = readCloser(body)
	r.ContentLength = int64(len(body))
	return body, nil
}

// exchange is one keyed send on its way through the middleware.
type exchange struct {
	h     *handler
	w     http.ResponseWriter
	r     *http.Request
	s     *send
	scope string
}

// maxClaims bounds the claims of one keyed send: a retry claims again when the first
// attempt released the key or its lease ended while the retry waited.
const maxClaims = 3

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
)

func (x *exchange) run() {
	s, m := x.s, x.h.m
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
	scope, err := m.opts.Scope(x.r, s.tenant)
	if err != nil {
		x.refuse(&failure{kind: failInvalidParams, message: err.Error()}, true)
		return
	}
	x.scope = scope

	deadline := time.Now().Add(m.opts.ReplayWait)
	for claims := 1; ; claims++ {
		c, err := x.claim()
		if err != nil {
			x.unavailable("claim", err)
			return
		}
		switch c.Status {
		case idempotency.Claimed:
			x.forward(c.Token)
			return
		case idempotency.HeldByOtherMessage:
			x.conflict()
			return
		case idempotency.HeldBySameMessage:
		default:
			x.unavailable("claim", fmt.Errorf("index returned claim status %v", c.Status))
			return
		}
		rec := c.Record
		if rec.Pending() {
			var v verdict
			rec, v, err = x.await(rec, deadline)
			switch v {
			case verdictBound:
			case verdictReclaim:
				if claims < maxClaims {
					continue
				}
				x.inFlight(rec)
				return
			case verdictInFlight:
				x.inFlight(rec)
				return
			case verdictConflict:
				x.conflict()
				return
			case verdictUnavailable:
				x.unavailable("lookup", err)
				return
			case verdictGone:
				x.observe(OutcomeInFlight)
				return
			}
		}
		x.replay(rec)
		return
	}
}

func (x *exchange) claim() (idempotency.Claim, error) {
	m := x.h.m
	ctx, cancel := m.indexContext(x.r, false)
	defer cancel()
	return m.index.Claim(ctx, x.scope, x.s.key, x.s.messageID, m.opts.Lease)
}

// verdict is how a wait for a first attempt ended.
type verdict int

const (
	verdictBound       verdict = iota // the key is bound: replay it
	verdictReclaim                    // the key is free or its lease ended: claim again
	verdictInFlight                   // still pending when the wait ran out
	verdictConflict                   // now held by another message
	verdictUnavailable                // the index failed
	verdictGone                       // the client went away
)

// await waits until deadline for the first attempt holding the key to bind it,
// polling the index with growing intervals and woken at once when this process binds
// or releases the key.
func (x *exchange) await(rec idempotency.Record, deadline time.Time) (idempotency.Record, verdict, error) {
	m := x.h.m
	k := waitKey{x.scope, x.s.key}
	interval := 5 * time.Millisecond
	for {
		now := time.Now()
		if !rec.LeaseExpiresAt.IsZero() && !now.Before(rec.LeaseExpiresAt) {
			return rec, verdictReclaim, nil
		}
		if !now.Before(deadline) {
			return rec, verdictInFlight, nil
		}
		woken, leave := m.waiters.join(k)
		timer := time.NewTimer(min(interval, deadline.Sub(now)))
		select {
		case <-woken:
		case <-timer.C:
		case <-x.r.Context().Done():
			leave()
			timer.Stop()
			return rec, verdictGone, nil
		}
		leave()
		timer.Stop()
		interval = min(2*interval, 250*time.Millisecond)

		ctx, cancel := m.indexContext(x.r, false)
		got, found, err := m.index.Lookup(ctx, x.scope, x.s.key)
		cancel()
		switch {
		case err != nil:
			return rec, verdictUnavailable, err
		case !found:
			return rec, verdictReclaim, nil
		case got.MessageID != x.s.messageID:
			return rec, verdictConflict, nil
		case !got.Pending():
			return got, verdictBound, nil
		}
		rec = got
	}
}

// refuse answers a keyed send that the middleware will not run. ext says whether the
// answer names the extension in A2A-Extensions (not when keys cannot be honoured).
func (x *exchange) refuse(f *failure, ext bool) {
	x.logAttrs(slog.LevelDebug, "idempotency: keyed send refused", slog.String("reason", f.message))
	writeFailure(x.w, x.s.b, x.s, f, ext)
	x.observe(OutcomeRefused)
}

func (x *exchange) conflict() {
	x.logAttrs(slog.LevelInfo, "idempotency: key reused by a different message, send refused")
	writeFailure(x.w, x.s.b, x.s, &failure{kind: failInvalidParams, message: msgAlreadyHeld}, true)
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
	writeFailure(x.w, x.s.b, x.s, &failure{kind: failUnavailable, message: msgUnavailable, retryAfter: defaultRetryAfter}, true)
	x.observe(OutcomeUnavailable)
}

// maxInFlightRetryAfter caps the Retry-After of a 409: the lease may have minutes
// left, but the first attempt usually makes its task known long before, and a retry
// then gets it.
const maxInFlightRetryAfter = 10 * time.Second

// inFlight answers 409: the first attempt is still running and its task is unknown.
// Retry-After is the time left on its lease (when the retry may take it over), capped
// at maxInFlightRetryAfter.
func (x *exchange) inFlight(rec idempotency.Record) {
	wait := min(time.Until(rec.LeaseExpiresAt), maxInFlightRetryAfter)
	x.logAttrs(slog.LevelInfo, "idempotency: first attempt still in flight, retry answered 409", slog.Duration("lease_left", wait))
	writeFailure(x.w, x.s.b, x.s, &failure{kind: failInFlight, message: msgInFlight, retryAfter: max(wait, time.Second)}, true)
	x.observe(OutcomeInFlight)
}

// observe reports the outcome of the keyed send to Options.Observe.
func (x *exchange) observe(o Outcome) {
	if fn := x.h.m.opts.Observe; fn != nil {
		fn(Event{Outcome: o, Binding: x.s.b.name(), Version: x.s.b.version(), Streaming: x.s.streaming, Scope: x.scope})
	}
}

// logAttrs logs msg with the exchange's attributes and extra. The key is redacted
// in every record above debug level.
func (x *exchange) logAttrs(level slog.Level, msg string, extra ...slog.Attr) {
	log := x.h.m.log
	ctx := x.r.Context()
	if !log.Enabled(ctx, level) {
		return
	}
	key := idempotency.RedactKey(x.s.key)
	if level <= slog.LevelDebug {
		key = x.s.key
	}
	attrs := append([]slog.Attr{
		slog.String("binding", x.s.b.name()),
		slog.String("version", x.s.b.version()),
		slog.Bool("streaming", x.s.streaming),
		slog.String("scope", x.scope),
		slog.String("key", key),
	}, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}

// writeFailure answers s (nil for a request not read as a send) with f in binding
// b's shape. ext names the extension in the binding's extension headers.
func writeFailure(w http.ResponseWriter, b binding, s *send, f *failure, ext bool) {
	status, body, sse := b.failure(s, f)
	h := w.Header()
	if ext {
		addExtensionHeaders(h, b)
	}
	if f.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(f.retryAfter)))
	}
	writeAnswer(w, status, body, sse)
}

// writeResult answers s with res: the whole body of a non-streamed answer, or a
// stream of that one event. When res cannot be framed for s's binding, the answer is
// an internal error.
func writeResult(w http.ResponseWriter, s *send, res result) {
	body, err := s.b.result(s, res)
	if err != nil {
		writeFailure(w, s.b, s, &failure{kind: failInternal, message: "the key's task or reply could not be answered: " + err.Error()}, true)
		return
	}
	addExtensionHeaders(w.Header(), s.b)
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

// addExtensionHeaders lists the extension in the extension headers of binding b,
// unless it is already there.
func addExtensionHeaders(h http.Header, b binding) {
	for _, name := range b.extensionHeaders() {
		if !slices.Contains(h.Values(name), idempotency.ExtensionURI) {
			h.Add(name, idempotency.ExtensionURI)
		}
	}
}

// errNotFound reports whether err from a TaskReader says the task does not exist.
func errNotFound(err error) bool { return errors.Is(err, ErrTaskNotFound) }
