package main

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2akit/idempotency/middleware"
)

// REST send paths end in one of these; what comes before is the send's prefix.
const (
	restSendSuffix   = "/message:send"
	restStreamSuffix = "/message:stream"
)

// checkTenantPaths reports a template a2a-go's NewTenantRESTHandler would refuse.
func checkTenantPaths(templates []string) (err error) {
	for _, t := range templates {
		if !strings.Contains(t, "{") {
			return fmt.Errorf("%q has no {}: write the tenant's segments inside {}, e.g. /tenants/{*}", t)
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%q: %v", t, r)
				}
			}()
			middleware.TenantPathScope(t)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// newScope returns the middleware's Options.Scope for the sidecar: the tenant the
// A2A server behind routes a send by, and the caller when principalHeader is set.
//
// A server in front of which the sidecar runs may take the tenant from the body
// (params.tenant, the body's tenant of HTTP+JSON) or from the REST path (a2a-go's
// NewTenantRESTHandler, which then ignores the body's). The sidecar cannot see which,
// so it keeps apart every pair of sends the server might run as two:
//
//   - a JSON-RPC send, and an HTTP+JSON send at a path with no prefix
//     (/message:send) or at a mount the upstream's card lists (restMounts: /rest
//     for an interface http://upstream/rest), are in the key space of the tenant
//     the body names;
//   - an HTTP+JSON send whose prefix (below the card's mount, if any) matches a template (default /tenants/{*}, then
//     /{*}: /tenants/acme/message:send and /acme/message:send are tenant acme's) is
//     in the key space of the tenant the path names, whatever the body says; so a
//     JSON-RPC retry naming that tenant meets it;
//   - an HTTP+JSON send under a prefix no template matches is in a key space of that
//     prefix and the body's tenant together: two paths never share keys.
//
// The scope is written with each part quoted (strconv.Quote), so that no tenant,
// path or principal can spell another combination's scope.
//
// With principalHeader set, the caller the header names is part of the scope too,
// and a keyed send without it is refused; when fromTrusted is not nil, so is a keyed
// send that names a caller but does not come from a trusted proxy.
func newScope(templates []string, mounts *restMounts, principalHeader string, fromTrusted func(*http.Request) bool) func(r *http.Request, tenant string) (string, error) {
	byPath := make([]func(*http.Request, string) (string, error), len(templates))
	segments := make([]int, len(templates))
	for i, t := range templates {
		byPath[i] = middleware.TenantPathScope(t)
		segments[i] = countSegments(strings.NewReplacer("{", "", "}", "").Replace(t))
	}
	return func(r *http.Request, tenant string) (string, error) {
		scope := strconv.Quote(tenant)
		prefix, ok := restPrefix(r)
		if below, mounted := mounts.below(prefix); ok && mounted {
			prefix = below // the templates match what follows the card's mount
		}
		if ok && prefix != "" {
			matched := false
			rr := r
			if rr.URL.Path != prefix+restSendSuffix && rr.URL.Path != prefix+restStreamSuffix {
				rr = r.Clone(r.Context())
				rr.URL.Path = prefix + restSendSuffix
			}
			for i, f := range byPath {
				// TenantPathScope returns the tenant the path names when the template
				// matches the start of the prefix (never empty), else the tenant it is
				// given: here "". Only a template that spans the whole prefix names
				// the send's tenant: under /{*}, /a/b/message:send is not tenant a's.
				if countSegments(prefix) != segments[i] {
					continue
				}
				if t, err := f(rr, ""); err == nil && t != "" {
					scope, matched = strconv.Quote(t), true
					break
				}
			}
			if !matched {
				scope += " path " + strconv.Quote(prefix)
			}
		}
		if principalHeader != "" {
			p := r.Header.Values(principalHeader)
			switch {
			case len(p) == 0 || p[0] == "":
				return "", fmt.Errorf("the request lacks the %s header that the authenticating proxy in front of this server sets; "+
					"send it through that proxy", principalHeader)
			case fromTrusted != nil && !fromTrusted(r):
				return "", fmt.Errorf("the request names its caller in %s but does not come from a trusted proxy; "+
					"send it through the authenticating proxy in front of this server", principalHeader)
			case len(p) > 1:
				return "", errors.New("the request names its caller more than once; send it through the authenticating proxy in front of this server")
			}
			scope += " principal " + strconv.Quote(p[0])
		}
		return scope, nil
	}
}

// restPrefix returns the path before /message:send or /message:stream of an
// HTTP+JSON send.
func restPrefix(r *http.Request) (string, bool) {
	if p, ok := strings.CutSuffix(r.URL.Path, restStreamSuffix); ok {
		return p, true
	}
	return strings.CutSuffix(r.URL.Path, restSendSuffix)
}

// countSegments counts the non-empty segments of a path.
func countSegments(p string) int {
	n := 0
	for s := range strings.SplitSeq(p, "/") {
		if s != "" {
			n++
		}
	}
	return n
}
