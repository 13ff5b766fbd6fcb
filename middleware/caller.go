package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrNoPrincipal refuses a keyed send whose caller a binding's Principal option
// named as empty; its text is the refusal's message.
var ErrNoPrincipal = errors.New("this server binds idempotency keys to their caller, and the keyed send names none: " +
	"send it authenticated")

// PrincipalHeader returns an [Options.Principal] that takes the caller from the
// request header name, as an authenticating proxy in front of the server sets it (for
// example X-Authenticated-User). A keyed send without the header, or that names its
// caller more than once, is refused. Use it only when every request passes through
// that proxy, which must drop the header from what clients send: a client that can
// set it can claim to be anyone.
func PrincipalHeader(name string) func(r *http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		switch v := r.Header.Values(name); {
		case len(v) > 1:
			return "", fmt.Errorf("the request names its caller in %s more than once; send it through the "+
				"authenticating proxy in front of this server", name)
		case len(v) == 0 || v[0] == "":
			return "", fmt.Errorf("the request lacks the %s header that the authenticating proxy in front of this "+
				"server sets; send it through that proxy", name)
		default:
			return v[0], nil
		}
	}
}

// identify returns the scope of the exchange's keyed send, and sets its Principal
// and Fingerprint as Options.Principal and Options.CheckContent ask.
func (x *exchange) identify() (string, error) {
	m, s := x.m, x.s
	scope, err := x.scope()
	if err != nil {
		return "", err
	}
	if m.principal != nil {
		p, err := m.principal(x.r)
		switch {
		case err != nil:
			return "", err
		case p == "":
			return "", ErrNoPrincipal
		}
		x.ks.Principal = p
	}
	if m.checkContent {
		fp, err := bodyFingerprint(x.body, s.d.framing() == BindingJSONRPC)
		if err != nil {
			return "", err
		}
		x.ks.Fingerprint = fp
	}
	return scope, nil
}

// scope returns the key's scope: Options.Scope's, or by the default routes, which
// read another version's prefix (A2A v0.3's /v1) as no tenant, and learn the agent card's HTTP+JSON
// mounts (once) before they scope the first HTTP+JSON send under a path.
func (x *exchange) scope() (string, error) {
	m, s := x.m, x.s
	if m.routes == nil {
		return m.scope(x.r, s.tenant)
	}
	rest := s.d.framing() == BindingHTTPJSON
	prefix := s.prefix
	if f, ok := s.d.(foreignREST); ok {
		prefix = strings.TrimSuffix(prefix, f.prefix) // another version's (v0.3's /v1): no tenant
	}
	if rest && prefix != "" && m.learnRoutes && !m.routes.learnt() {
		m.cardOnce.Do(x.learnCard)
	}
	return m.routes.scopeAt(prefix, rest, s.tenant), nil
}

// learnCard reads the agent card through the wrapped handler, as a client would
// (bounded by IndexTimeout, whether or not the client stays), and teaches the
// default routes its HTTP+JSON mounts.
func (x *exchange) learnCard() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), x.c.indexTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, agentCardPath, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "application/json")
	bw := &bufferWriter{header: make(http.Header)}
	x.serveInner(bw, req, ctx)
	if bw.code() == http.StatusOK {
		x.m.routes.LearnCard(bw.buf.Bytes(), "")
	}
}
