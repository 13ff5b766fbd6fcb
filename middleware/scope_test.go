package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

func TestTenantRoutes(t *testing.T) {
	def, err := middleware.NewTenantRoutes()
	if err != nil {
		t.Fatal(err)
	}
	mounted, err := middleware.NewTenantRoutes()
	if err != nil {
		t.Fatal(err)
	}
	mounted.LearnCard([]byte(`{"supportedInterfaces":[{"url":"http://h/v1","protocolBinding":"HTTP+JSON"},`+
		`{"url":"http://h/jsonrpc","protocolBinding":"JSONRPC"}]}`), "")
	for _, c := range []struct {
		routes             *middleware.TenantRoutes
		path, tenant, want string
	}{
		{def, "/tenants/acme/message:send", "", "acme"},
		{def, "/tenants/acme/message:stream", "globex", "acme"}, // the path wins, as in a2a-go
		{def, "/tenants/acme/message%3Asend", "", "acme"},
		{def, "/acme/message:send", "", "acme"},
		{def, "/message:send", "globex", "globex"}, // no prefix: the body's tenant
		{def, "/jsonrpc", "acme", "acme"},          // JSON-RPC names its tenant
		{def, "/jsonrpc", `"acme`, `"\"acme"`},     // a tenant that could spell a path's scope
		{def, "/a/b/message:send", "acme", `"acme" path "/a/b"`},
		{def, "/v1/message:send", "", "v1"},               // no card: /v1 reads as a tenant
		{mounted, "/v1/message:send", "globex", "globex"}, // at the card's mount: the body's
		{mounted, "/v1/acme/message:send", "", "acme"},    // below it: the templates
		{mounted, "/v1/tenants/acme/message:send", "", "acme"},
	} {
		r := httptest.NewRequest("POST", c.path, nil)
		got, err := c.routes.Scope(r, c.tenant)
		if err != nil || got != c.want {
			t.Errorf("scope(%s, tenant %q) = %q, %v; want %q", c.path, c.tenant, got, err, c.want)
		}
	}
}

// A client that names its tenant only in the path (the body's tenant empty) to a2a-go's
// tenant REST handler: by the default routes, or routes naming the mount, the same
// key under two path tenants is two sends. The a2a-go client always fills the body's
// tenant, so these posts are raw.
func TestTenantRoutesSeparatePathTenants(t *testing.T) {
	routes, err := middleware.NewTenantRoutes("/t/{*}")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		scope func(*http.Request, string) (string, error)
	}{
		{"routes", routes.Scope},
		{"default", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{opts: middleware.Options{Scope: c.scope}})
			key, id := idempotency.NewKey(), "path-tenant-"+idempotency.NewKey()
			body := `{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hi"}],` +
				`"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}}`
			for _, tenant := range []string{"acme", "globex", "acme"} {
				resp, err := h.hc.Post(h.srv.URL+"/t/"+tenant+"/message:send", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("tenant %s: %d %s", tenant, resp.StatusCode, got)
				}
			}
			if n := h.agent.RunsOf(id); n != 2 {
				t.Fatalf("agent ran %d times, want 2", n)
			}
		})
	}
}
