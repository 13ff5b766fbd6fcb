package anyserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

// Issue 26, item 1: one keyed body sent to two tenants' paths
// (/tenants/acme/message:send, /tenants/globex/message:send, which a2a-go's tenant
// REST handler routes by the path) and as JSON-RPC sends naming each tenant in
// params.tenant, through every front (the sidecar on each store, the middleware with
// its default scope): two runs, two tasks, and each tenant's retry, over either
// binding, gets its own task, never the other's.
func TestOneBodyTwoTenants(t *testing.T) {
	for _, f := range fronts {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			up := startUpstream(t)
			base := f.start(t, up, kit{lease: 10 * time.Second, replayWait: 2 * time.Second})
			key, id := idempotency.NewKey(), "one-body-"+idempotency.NewKey()
			meta, exts, err := idempotency.SetKey(nil, nil, key)
			if err != nil {
				t.Fatal(err)
			}
			msg := map[string]any{"messageId": id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}},
				"metadata": meta, "extensions": exts}
			rest := func(tenant string) string {
				body, _ := json.Marshal(map[string]any{"message": msg})
				return taskOf(t, base+"/tenants/"+tenant+"/message:send", body, false)
			}
			rpc := func(tenant string) string {
				body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
					"params": map[string]any{"tenant": tenant, "message": msg}})
				return taskOf(t, base+"/jsonrpc", body, true)
			}
			acme, globex := rest("acme"), rest("globex")
			if acme == globex {
				t.Fatalf("both tenants got task %s: globex was handed acme's task", acme)
			}
			for _, c := range []struct{ what, got, want string }{
				{"acme's JSON-RPC retry", rpc("acme"), acme},
				{"globex's JSON-RPC retry", rpc("globex"), globex},
				{"acme's HTTP+JSON retry", rest("acme"), acme},
				{"globex's HTTP+JSON retry", rest("globex"), globex},
			} {
				if c.got != c.want {
					t.Errorf("%s got task %s, want %s", c.what, c.got, c.want)
				}
			}
			checkRuns(t, up, 2)
		})
	}
}

// taskOf posts body to url and returns the id of the task answered (of a JSON-RPC
// result when rpc is true).
func taskOf(t *testing.T, url string, body []byte, rpc bool) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	_ = json.Unmarshal(b, &a)
	id := a.Task.ID
	if rpc {
		id = a.Result.Task.ID
	}
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("POST %s: %d %s; want a task", url, resp.StatusCode, b)
	}
	return id
}
