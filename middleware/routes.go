package middleware

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// TenantRoutes decides the scope of a keyed send: the tenant the A2A server behind
// routes it by, so that two tenants never share a key and a send retried over
// another binding of the same tenant meets its first attempt. It is the one decision
// of every entry point: the middleware's default [Options.Scope], grpcbinding's
// default scope ([TenantScope]) and the sidecar's. Create it with [NewTenantRoutes];
// it is safe for concurrent use.
//
// The rules, in order, for a send whose body names tenant:
//
//   - a JSON-RPC send (and any send not at an HTTP+JSON send path) is in tenant's
//     scope ([TenantScope]), as is an HTTP+JSON send at a path with no prefix
//     (/message:send), or at a mount that the agent card lists as an HTTP+JSON
//     interface (a send to /rest/message:send for an interface http://host/rest, or
//     /v1/message:send for http://host/v1: not tenant "v1");
//   - an HTTP+JSON send whose prefix (what precedes /message:send, below the card's
//     mount if any) a template spans whole is in the scope of the tenant the path
//     names, whatever the body says, as a2a-go's NewTenantRESTHandler routes it
//     (with the default templates /tenants/{*} then /{*}: /tenants/acme/message:send
//     and /acme/message:send are tenant acme's; /a/b/message:send is no tenant's,
//     since /{*} spans one segment);
//   - an HTTP+JSON send under a prefix no template spans is in a scope of that
//     prefix and tenant together: two such paths never share keys.
//
// A2A v0.3 sends name no tenant: their /v1 path segment is not read as one.
type TenantRoutes struct {
	templates []tenantTemplate
	// mounts are the paths of the HTTP+JSON interfaces the agent card lists.
	mounts atomic.Pointer[[]string]
}

// DefaultTenantTemplates are the templates of [NewTenantRoutes] when it is given
// none: a2a-go's /tenants/{tenant} convention, then a tenant as the first segment.
func DefaultTenantTemplates() []string { return []string{"/tenants/{*}", "/{*}"} }

// NewTenantRoutes returns the routes of templates, tried in order, in the syntax of
// a2a-go's a2asrv.NewTenantRESTHandler written from the root of the server's paths:
// '*' matches one segment, and the segments inside the one {} are the tenant, joined
// with '/' ("/tenants/{*}"; "/locations/*/projects/{*}" takes the project;
// "/{locations/*/projects/*}" all four segments). No templates means
// [DefaultTenantTemplates]. A template a2a-go would refuse (no {}, more than one,
// braces out of order) or whose {} holds no segment is an error: a configuration
// error, found at setup.
func NewTenantRoutes(templates ...string) (*TenantRoutes, error) {
	if len(templates) == 0 {
		templates = DefaultTenantTemplates()
	}
	t := &TenantRoutes{}
	for _, raw := range templates {
		tt, err := parseTenantTemplate(raw)
		if err != nil {
			return nil, fmt.Errorf("middleware: tenant template: %w", err)
		}
		t.templates = append(t.templates, tt)
	}
	return t, nil
}

// TenantScope returns the scope of a send whose tenant is named by its request, not
// its path: a JSON-RPC or gRPC send's. It is tenant itself, unless tenant begins
// with '"': then it is quoted, so that no tenant spells the scope of a path
// [TenantRoutes] keeps apart.
func TenantScope(tenant string) string {
	if strings.HasPrefix(tenant, `"`) {
		return strconv.Quote(tenant)
	}
	return tenant
}

// Scope is an [Options.Scope]: the scope of the send r (read as an A2A v1.0 send)
// whose body names tenant, by the rules of [TenantRoutes]. It never fails.
func (t *TenantRoutes) Scope(r *http.Request, tenant string) (string, error) {
	prefix, _, rest := restSend(r)
	return t.scopeAt(prefix, rest, tenant), nil
}

// scopeAt returns the scope of a send whose body names tenant: an HTTP+JSON send at
// prefix when rest is true.
func (t *TenantRoutes) scopeAt(prefix string, rest bool, tenant string) string {
	if !rest || prefix == "" {
		return TenantScope(tenant)
	}
	if below, mounted := t.below(prefix); mounted {
		if below == "" {
			return TenantScope(tenant)
		}
		prefix = below // the templates match what follows the card's mount
	}
	n := countSegments(prefix)
	for _, tt := range t.templates {
		if n != len(tt.segments) {
			continue // only a template that spans the whole prefix names the tenant
		}
		if captured, ok := tt.match(prefix); ok && captured != "" {
			return TenantScope(captured)
		}
	}
	return strconv.Quote(tenant) + " path " + strconv.Quote(prefix)
}

// countSegments counts the non-empty segments of a path.
func countSegments(p string) int { return len(appendSegments(nil, p)) }

// LearnCard records the HTTP+JSON interfaces that card (an agent card, v1.0
// supportedInterfaces or v0.3 url and additionalInterfaces) lists, by their URL's
// path below base (the path at which the server's own paths begin, "" for the
// middleware's; the sidecar's upstream path). The middleware learns them from the
// card it serves, and reads the card once through the wrapped handler at its first
// HTTP+JSON send under a path; the sidecar from every card it edits. A card that is
// not JSON is ignored.
func (t *TenantRoutes) LearnCard(card []byte, base string) {
	var c struct {
		SupportedInterfaces []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
		URL                  string `json:"url"`
		PreferredTransport   string `json:"preferredTransport"`
		AdditionalInterfaces []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
	}
	if json.Unmarshal(card, &c) != nil {
		return
	}
	var urls []string
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, string(BindingHTTPJSON)) {
			urls = append(urls, i.URL)
		}
	}
	if strings.EqualFold(c.PreferredTransport, string(BindingHTTPJSON)) {
		urls = append(urls, c.URL)
	}
	for _, i := range c.AdditionalInterfaces {
		if strings.EqualFold(i.Transport, string(BindingHTTPJSON)) {
			urls = append(urls, i.URL)
		}
	}
	base = strings.TrimSuffix(base, "/")
	paths := []string{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		p := u.Path
		if rest, ok := strings.CutPrefix(p, base); ok && (rest == "" || rest[0] == '/') {
			p = rest
		}
		paths = append(paths, strings.TrimSuffix(p, "/"))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	t.mounts.Store(&paths)
}

// learnt reports whether a card was learnt.
func (t *TenantRoutes) learnt() bool { return t.mounts.Load() != nil }

// below returns what follows the longest known mount that prefix is at or below,
// and whether there is one: "" for a send at the mount itself.
func (t *TenantRoutes) below(prefix string) (string, bool) {
	p := t.mounts.Load()
	if p == nil {
		return "", false
	}
	best, found := "", false
	for _, mount := range *p {
		if rest, ok := strings.CutPrefix(prefix, mount); ok && (rest == "" || rest[0] == '/') && (!found || len(mount) > len(best)) {
			best, found = mount, true
		}
	}
	if !found {
		return "", false
	}
	return prefix[len(best):], true
}
