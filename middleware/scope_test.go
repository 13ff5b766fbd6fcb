package middleware_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
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
	based, err := middleware.NewTenantRoutes()
	if err != nil {
		t.Fatal(err)
	}
	based.LearnCard([]byte(`{"supportedInterfaces":[{"url":"http://up:8080/base/rest","protocolBinding":"HTTP+JSON"}]}`), "/base")
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
		{based, "/rest/message:send", "acme", "acme"}, // the card's URL below the upstream's base path
		{based, "/rest/acme/message:stream", "", "acme"},
	} {
		r := httptest.NewRequest("POST", c.path, nil)
		got, err := c.routes.Scope(r, c.tenant)
		if err != nil || got != c.want {
			t.Errorf("scope(%s, tenant %q) = %q, %v; want %q", c.path, c.tenant, got, err, c.want)
		}
	}
}

// No two sends that a server may route as two tenants share a scope, whatever
// tenant a client names.
func TestTenantRoutesKeepScopesApart(t *testing.T) {
	def, err := middleware.NewTenantRoutes()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, c := range [][2]string{
		{"/tenants/acme/message:send", ""}, {"/tenants/globex/message:send", ""}, {"/a/b/message:send", ""},
		{"/a/c/message:send", ""}, {"/jsonrpc", "x"}, {"/jsonrpc", `" path "/a/b"`}, {"/jsonrpc", `"" path "/a/b"`},
		{"/jsonrpc", `"acme"`},
	} {
		s, _ := def.Scope(httptest.NewRequest(http.MethodPost, c[0], nil), c[1])
		if prev, ok := seen[s]; ok {
			t.Errorf("%s and %v share scope %s", prev, c, s)
		}
		seen[s] = c[0] + " " + c[1]
	}
}

// TestOneBodyTwoTenants: one keyed body sent to two tenants' paths of a2a-go's
// tenant REST handler (the body's tenant empty, as raw clients send it), and as
// JSON-RPC sends naming each tenant, by the default routes (the card lists the
// mount /t) or routes naming the template: two runs, two tasks, and each tenant's
// retry, over either binding, gets its own task.
func TestOneBodyTwoTenants(t *testing.T) {
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
			h := mwtest.New(t, mwtest.Config{Opts: middleware.Options{Scope: c.scope}})
			key, id := idempotency.NewKey(), "path-tenant-"+idempotency.NewKey()
			msg := `{"messageId":"` + id + `","role":"ROLE_USER","parts":[{"text":"hi"}],` +
				`"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}`
			post := func(url, body string) string {
				t.Helper()
				resp, err := h.HTTP.Post(h.Server.URL+url, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var a struct {
					Task   struct{ ID string } `json:"task"`
					Result struct {
						Task struct{ ID string } `json:"task"`
					} `json:"result"`
				}
				_ = json.Unmarshal(got, &a)
				if resp.StatusCode != http.StatusOK || a.Task.ID+a.Result.Task.ID == "" {
					t.Fatalf("%s: %d %s", url, resp.StatusCode, got)
				}
				return a.Task.ID + a.Result.Task.ID
			}
			rest := func(tenant string) string { return post("/t/"+tenant+"/message:send", `{"message":`+msg+`}`) }
			rpc := func(tenant string) string {
				return post("/jsonrpc", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"tenant":"`+tenant+`","message":`+msg+`}}`)
			}
			acme, globex := rest("acme"), rest("globex")
			if acme == globex {
				t.Fatalf("both tenants got task %s", acme)
			}
			if a, g, a2 := rpc("acme"), rpc("globex"), rest("acme"); a != acme || g != globex || a2 != acme {
				t.Fatalf("retries got %s, %s, %s; want %s, %s, %s", a, g, a2, acme, globex, acme)
			}
			if n := h.Agent.RunsOf(id); n != 2 {
				t.Fatalf("agent ran %d times, want 2", n)
			}
		})
	}
}

// Options.Tenants: routes the caller teaches (as the sidecar does from its upstream's
// card) read another version's prefix as no tenant: an A2A v0.3 HTTP+JSON send at
// the card's mount /a2a/rest (/a2a/rest/v1/message:send) is in the body's (empty)
// tenant's scope, as a JSON-RPC send, not tenant "v1"'s; a v1.0 send below the mount
// still names its path tenant.
func TestTenantsReadAnotherVersionsPrefixAsNoTenant(t *testing.T) {
	routes, err := middleware.NewTenantRoutes()
	if err != nil {
		t.Fatal(err)
	}
	routes.LearnCard([]byte(`{"supportedInterfaces":[{"url":"http://up/a2a/rest","protocolBinding":"HTTP+JSON","protocolVersion":"0.3"}]}`), "")
	var scopes []string
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Tenants: routes, Logger: mwtest.DiscardLogger(),
		Observe: func(e middleware.Event) { scopes = append(scopes, string(e.Version)+" "+e.Scope) }})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(replyServer(new(int)))
	v03 := `{"message":{"messageId":"m03","role":"ROLE_USER","content":[{"text":"hi"}],"metadata":{"` +
		idempotency.MetadataKey + `":"` + idempotency.NewKey() + `"}}}`
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/a2a/rest/v1/message:send", strings.NewReader(v03)))
	h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend("/a2a/rest/acme/message:send", "m10", idempotency.NewKey()))
	if want := []string{"0.3 ", "1.0 acme"}; !slices.Equal(scopes, want) {
		t.Fatalf("scopes %q, want %q", scopes, want)
	}
}
