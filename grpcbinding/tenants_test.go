package grpcbinding

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
)

// Issue 26, item 1, on gRPC: one keyed message sent for two tenants (the request's
// tenant) is two sends with the default scope, two runs, two tasks; each tenant's
// retry, over gRPC or as a JSON-RPC send naming the tenant, gets its own task.
func TestOneBodyTwoTenants(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	c := s.raw(t)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	grpcSend := func(tenant string) string {
		req := rawRequest(t, &a2a.SendMessageRequest{Message: msg, Tenant: tenant})
		got, err := sendAs(ctx, c, "", false, req)
		if err != nil {
			t.Fatalf("gRPC send for %s: %v", tenant, err)
		}
		return got
	}
	rpcSend := func(tenant string) string {
		m, err := marshalJSON(rawRequest(t, &a2a.SendMessageRequest{Message: msg}).GetMessage())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
			"params": map[string]any{"tenant": tenant, "message": json.RawMessage(m)}})
		resp, err := http.Post(s.httpURL+"/jsonrpc", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var a struct {
			Result struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"result"`
		}
		_ = json.Unmarshal(b, &a)
		return "task " + a.Result.Task.ID
	}
	acme, globex := grpcSend("acme"), grpcSend("globex")
	if acme == globex {
		t.Fatalf("both tenants got %s", acme)
	}
	for _, c := range []struct{ what, got, want string }{
		{"acme's gRPC retry", grpcSend("acme"), acme},
		{"globex's JSON-RPC retry", rpcSend("globex"), globex},
		{"acme's JSON-RPC retry", rpcSend("acme"), acme},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.what, c.got, c.want)
		}
	}
	if n := s.agent.RunsOf(msg.ID); n != 2 {
		t.Errorf("the agent ran %d times, want 2", n)
	}
}
