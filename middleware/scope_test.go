package middleware_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/middleware"
)

func TestTenantPathScope(t *testing.T) {
	scope := middleware.TenantPathScope("/t/")
	for _, c := range []struct {
		path, tenant, want string
	}{
		{"/t/acme/message:send", "", "acme"},
		{"/t/acme/message:stream", "globex", "acme"}, // the path wins, as in a2a-go
		{"/t/acme/message%3Asend", "", "acme"},
		{"/rest/message:send", "globex", "globex"}, // not under the mount
		{"/t/message:send", "globex", "globex"},    // no tenant segment
		{"/jsonrpc", "acme", "acme"},               // JSON-RPC names its tenant
		{"/tasks/acme/message:send", "", ""},
	} {
		r := httptest.NewRequest("POST", c.path, nil)
		got, err := scope(r, c.tenant)
		if err != nil || got != c.want {
			t.Errorf("scope(%s, tenant %q) = %q, %v; want %q", c.path, c.tenant, got, err, c.want)
		}
	}
}

// A client that names its tenant only in the path (the body's tenant empty) to a2a-go's
// tenant REST handler: with TenantPathScope the same key under two path tenants is two
// sends; with the default scope it is one, and the other tenant gets the first
// tenant's task. The a2a-go client always fills the body's tenant, so these posts are
// raw.
func TestTenantPathScopeSeparatesPathTenants(t *testing.T) {
	for _, c := range []struct {
		name  string
		scope func(*http.Request, string) (string, error)
		runs  int64
	}{
		{"TenantPathScope", middleware.TenantPathScope("/t"), 2},
		{"DefaultScope", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{Scope: c.scope}})
			key, id := idempotency.NewKey(), "path-tenant-"+idempotency.NewKey()
			body := `{"message":{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hi"}],` +
				`"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}}`
			for _, tenant := range []string{"acme", "globex", "acme"} {
				resp, err := h.HTTP.Post(h.Server.URL+"/t/"+tenant+"/message:send", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("tenant %s: %d %s", tenant, resp.StatusCode, got)
				}
			}
			if n := h.Agent.RunsOf(id); n != c.runs {
				t.Fatalf("agent ran %d times, want %d", n, c.runs)
			}
		})
	}
}
