package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
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
	m, err := newMiddleware(index, opts)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler { return &handler{m: m, next: next} }, nil
}

// newMiddleware validates opts and returns what the handlers of one New (or one
// NewSends) share.
func newMiddleware(index idempotency.KeyIndex, opts Options) (*middleware, error) {
	switch {
	case opts.Lease < 0:
		return nil, fmt.Errorf("middleware: negative Lease %v", opts.Lease)
	case opts.MaxBodyBytes < 0:
		return nil, fmt.Errorf("middleware: negative MaxBodyBytes %d", opts.MaxBodyBytes)
	case opts.IndexTimeout < 0:
		return nil, fmt.Errorf("middleware: negative IndexTimeout %v", opts.IndexTimeout)
	case opts.ForwardTimeout < 0:
		return nil, fmt.Errorf("middleware: negative ForwardTimeout %v", opts.ForwardTimeout)
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
	if opts.ForwardTimeout == 0 {
		opts.ForwardTimeout = DefaultForwardTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var routes *TenantRoutes
	own := false
	if opts.Scope == nil {
		if routes = opts.Tenants; routes == nil {
			routes, _ = NewTenantRoutes() // the default templates parse
			own = true
		}
		opts.Scope = routes.Scope
	}
	m := &middleware{
		core: core{
			index:          index,
			lease:          opts.Lease,
			soleInstance:   opts.SoleInstance,
			replayWait:     opts.ReplayWait,
			indexTimeout:   opts.IndexTimeout,
			log:            opts.Logger,
			observe:        opts.Observe,
			tasks:          opts.Tasks,
			waiters:        &notifier{},
			live:           &liveForwards{},
			forwardTimeout: opts.ForwardTimeout,
		},
		early:        &earlyBinder{mode: opts.EarlyBind},
		scope:        opts.Scope,
		routes:       routes,
		learnRoutes:  own,
		principal:    opts.Principal,
		checkContent: opts.CheckContent,
		reads:        opts.Reads,
		maxBodyBytes: opts.MaxBodyBytes,
		log:          opts.Logger,
	}
	m.sends = &Sends{m: m}
	return m, nil
}

// middleware is what the handlers of one New share: the engine (core, and sends, its
// API) and the HTTP binding's own state, early binding's included.
type middleware struct {
	core  core
	sends *Sends
	early *earlyBinder
	scope func(r *http.Request, tenant string) (string, error)
	// routes are the default scope's, when Options.Scope is nil. When learnRoutes
	// (the middleware made them), it teaches them the card's mounts, read once
	// (cardOnce) or as it serves the card.
	routes       *TenantRoutes
	learnRoutes  bool
	cardOnce     sync.Once
	principal    func(r *http.Request) (string, error)
	checkContent bool
	reads        func(r *http.Request) bool
	maxBodyBytes int64
	log          *slog.Logger

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
	if m.core.index == nil {
		return false
	}
	h, ok := m.core.index.(idempotency.Honouring)
	if !ok {
		return true
	}
	if st := m.honour.Load(); st != nil && time.Since(st.at) < honourTTL {
		return st.ok
	}
	call, cancel := context.WithTimeout(ctx, m.core.indexTimeout)
	defer cancel()
	ok = h.HonoursKeys(call)
	if ctx.Err() == nil {
		// Not an answer to keep when the request's own context ended the call.
		m.honour.Store(&honourState{ok: ok, at: time.Now()})
	}
	return ok
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

// ServeHTTP is where every request enters: a GET of the agent card is served by
// serveCard, a POST is routed to its dialect, and a keyed send is handed to an
// exchange. Everything else passes through.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && isCardPath(r.URL.Path):
		h.serveCard(w, r)
		return
	case r.Method != http.MethodPost, h.m.reads != nil && !h.m.reads(r):
		h.next.ServeHTTP(w, r)
		return
	}
	body, isJSON, f := h.m.readBody(r)
	if f != nil {
		writeFailure(w, framingOf(r), nil, f, false)
		return
	}
	if isJSON && isExtendedCardCall(body) {
		h.serveExtendedCardCall(w, r)
		return
	}
	if !isJSON || !mayCarryKey(body) && len(r.Header.Values(idempotency.KeyHeader)) == 0 {
		h.next.ServeHTTP(w, r)
		return
	}
	s := route(r, body)
	if s == nil || !s.keyed {
		h.next.ServeHTTP(w, r)
		return
	}
	x := &exchange{m: h.m, c: h.m.core, next: h.next, w: w, r: r, s: s, body: body}
	x.run()
}
