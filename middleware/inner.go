package middleware

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// serveInner serves req, a request the middleware makes on behalf of the client's
// request r (a task read, a subscription, a probe, a read of the agent card), and
// returns when the handler does. req is cancelled when parent ends.
//
// req must route exactly as a fresh client request would (SPEC §6), whatever state
// the router keeps in the request context. Routers that keep it there (chi's route
// context, gorilla/mux's route and variables) have filled it in for r already, and
// the wrapped handler of a middleware installed inside such a router (chi's r.Use)
// routes with that state: a second request sent through it with r's context routes
// on stale state. So when r came through a net/http server, req is served by that
// server's own handler, from the top, with a context that carries only what
// net/http puts in a fresh request's context (the server, the local address), and a
// URL that is the one the client would have sent: r's request-target with its path
// ending changed as req's is (a mount prefix stripped before the middleware is put
// back). Every middleware in front of the kit then sees req as a fresh request (an
// authentication middleware authenticates its headers, which are r's). Values that a
// server's BaseContext or ConnContext put in r's context are not in req's.
//
// When r did not come through a net/http server, or its path was rewritten in front
// of the middleware in a way that does not keep the request-target's ending,
// req goes to the wrapped handler with r's context, as before.
//
// A panic of the handler that serves req (httputil.ReverseProxy aborts with
// http.ErrAbortHandler when the answer it copies is cut, as the probe cuts its
// subscription) is recovered: req's answer is then what was written before it, and
// the process, and the client's request, go on.
func (x *exchange) serveInner(w http.ResponseWriter, req *http.Request, parent context.Context) {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			x.c.logSend(parent, &x.ks, slog.LevelError, "idempotency: a request the middleware made on a client's "+
				"behalf panicked; recovered", slog.Any("panic", v), slog.String("path", req.URL.Path))
		}
	}()
	if top, u, ok := x.topRoute(req.URL); ok {
		ctx, cancel := context.WithCancel(freshContext(x.r.Context()))
		defer cancel()
		stop := context.AfterFunc(parent, cancel)
		defer stop()
		in := req.WithContext(ctx)
		in.URL = u
		in.RequestURI = u.RequestURI()
		top.ServeHTTP(w, in)
		return
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	x.next.ServeHTTP(w, req.WithContext(ctx))
}

// topRoute returns the handler of the net/http server r came through and the URL a
// client would send for u, a URL derived from r's, or false when there is none.
func (x *exchange) topRoute(u *url.URL) (http.Handler, *url.URL, bool) {
	r := x.r
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil || r.RequestURI == "" || strings.HasPrefix(r.RequestURI, "*") {
		return nil, nil, false
	}
	target, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return nil, nil, false
	}
	// The mount prefix stripped in front of the middleware, if any.
	mount, ok := strings.CutSuffix(target.EscapedPath(), r.URL.EscapedPath())
	if !ok {
		return nil, nil, false
	}
	if mount != "" {
		p, err := url.PathUnescape(mount)
		if err != nil {
			return nil, nil, false
		}
		mount = p
	}
	out := *u
	out.Scheme, out.Host = "", ""
	out.Path, out.RawPath = mount+u.Path, ""
	top := srv.Handler
	if top == nil {
		top = http.DefaultServeMux
	}
	return top, &out, true
}

// freshContext returns a context with the local address net/http puts in the
// context of every request a server reads, taken from ctx, and nothing else. Not the
// server (http.ServerContextKey): with it, an httputil.ReverseProxy serving the inner
// request panics with http.ErrAbortHandler when its answer is cut, which no
// net/http connection recovers in the goroutine of an inner request.
func freshContext(ctx context.Context) context.Context {
	fresh := context.Background()
	if v := ctx.Value(http.LocalAddrContextKey); v != nil {
		fresh = context.WithValue(fresh, http.LocalAddrContextKey, v)
	}
	return fresh
}
