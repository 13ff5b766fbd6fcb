package main

import (
	"errors"
	"net/http"
	"strings"

	"github.com/a2akit/idempotency/middleware"
)

// isRESTSend reports whether r is at an HTTP+JSON send path (.../message:send or
// .../message:stream).
func isRESTSend(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/message:send") || strings.HasSuffix(r.URL.Path, "/message:stream")
}

// errUntrusted refuses a keyed send that names its caller but does not come from a
// trusted proxy.
var errUntrusted = errors.New("the request names its caller but does not come from a trusted proxy; " +
	"send it through the authenticating proxy in front of this server")

// newPrincipal returns the middleware's Options.Principal for -principal-header:
// the caller the header names (middleware.PrincipalHeader), which binds every key to
// its caller; when fromTrusted is not nil, a keyed send that names a caller but does
// not come from a trusted proxy is refused too.
func newPrincipal(header string, fromTrusted func(*http.Request) bool) func(*http.Request) (string, error) {
	named := middleware.PrincipalHeader(header)
	return func(r *http.Request) (string, error) {
		p, err := named(r)
		if err == nil && fromTrusted != nil && !fromTrusted(r) {
			return "", errUntrusted
		}
		return p, err
	}
}
