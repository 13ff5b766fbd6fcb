package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// The scope of a send by where it goes: sends at the card's HTTP+JSON mount meet
// JSON-RPC sends of the same tenant; a path tenant (below the mount too) is the
// tenant; unknown prefixes are key spaces of their own; the caller, when named, is
// part of every scope.
func TestScope(t *testing.T) {
	up, _ := url.Parse("http://10.0.0.5:8080/base")
	mounts := &restMounts{}
	mounts.learn([]byte(`{"supportedInterfaces":[{"url":"http://10.0.0.5:8080/base/jsonrpc","protocolBinding":"JSONRPC"},`+
		`{"url":"http://10.0.0.5:8080/base/rest","protocolBinding":"HTTP+JSON"}]}`), up)
	scope := newScope([]string{"/tenants/{*}", "/{*}"}, mounts, "", nil)
	of := func(path, tenant string) string {
		s, err := scope(httptest.NewRequest(http.MethodPost, path, nil), tenant)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return s
	}
	for _, c := range []struct{ a, b string }{
		{of("/jsonrpc", "acme"), of("/rest/message:send", "acme")},
		{of("/jsonrpc", ""), of("/rest/message:stream", "")},
		{of("/jsonrpc", ""), of("/message:send", "")},
		{of("/jsonrpc", "acme"), of("/tenants/acme/message:send", "")},
		{of("/jsonrpc", "acme"), of("/tenants/acme/message:send", "globex")},
		{of("/jsonrpc", "acme"), of("/acme/message:stream", "")},
		{of("/jsonrpc", "acme"), of("/rest/acme/message:send", "")},
	} {
		if c.a != c.b {
			t.Errorf("scopes %s and %s differ, want one", c.a, c.b)
		}
	}
	distinct := map[string]string{}
	for _, c := range [][2]string{
		{"/tenants/acme/message:send", ""}, {"/tenants/globex/message:send", ""}, {"/a/b/message:send", ""},
		{"/a/c/message:send", ""}, {"/jsonrpc", "x"}, {"/jsonrpc", `" path "/a/b"`},
	} {
		s := of(c[0], c[1])
		if prev, ok := distinct[s]; ok {
			t.Errorf("%s and %v share scope %s", prev, c, s)
		}
		distinct[s] = c[0] + " " + c[1]
	}
	withCaller := newScope([]string{"/tenants/{*}"}, mounts, "X-User", nil)
	r := httptest.NewRequest(http.MethodPost, "/tenants/acme/message:send", nil)
	r.Header.Set("X-User", "alice")
	alice, _ := withCaller(r, "")
	r.Header.Set("X-User", "bob")
	bob, _ := withCaller(r, "")
	if alice == bob || alice == of("/tenants/acme/message:send", "") {
		t.Errorf("callers' scopes %s, %s: want two, neither the bare tenant's", alice, bob)
	}
	r.Header.Del("X-User")
	if _, err := withCaller(r, ""); err == nil {
		t.Error("a keyed send without the caller header was scoped")
	}
}
