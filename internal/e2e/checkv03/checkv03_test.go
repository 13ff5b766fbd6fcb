package checkv03

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/servercheck"
)

// TestKitV03Passes: a v0.3 card (url, preferredTransport, additionalInterfaces)
// with a2a-go's v0.3 handlers behind the kit is checked in A2A v0.3's wire
// (message/send, "kind", HTTP+JSON under /v1) and passes.
func TestKitV03Passes(t *testing.T) {
	var runs testkit.CheckerRuns
	agent := &testkit.Agent{Delay: 200 * time.Millisecond, OnRun: runs.OnRun}
	store := testkit.NewStore()
	rh := a2asrv.NewHandler(adapter.NewExecutor(agent, adapter.Options{}), a2asrv.WithTaskStore(store),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, adapter.Options{})))
	mux := http.NewServeMux()
	mux.Handle("/v03", a2av0.NewJSONRPCHandler(rh))
	mux.Handle(a2av0.RESTPathPrefix+"/", a2av0.NewRESTHandler(rh))
	var base string
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"v03","description":"echo","version":"1","protocolVersion":"0.3.0","url":%q,"preferredTransport":"JSONRPC",`+
			`"additionalInterfaces":[{"url":%q,"transport":"HTTP+JSON"}],"capabilities":{"streaming":true},`+
			`"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, base+"/v03", base)
	})
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(mux))
	defer srv.Close()
	base = srv.URL

	rep, err := servercheck.Run(context.Background(), srv.URL, servercheck.Options{AgentDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", rep)
	if len(rep.Interfaces) != 2 || rep.Interfaces[0].Version != "0.3" || rep.Interfaces[1].Binding != servercheck.BindingHTTPJSON {
		t.Fatalf("interfaces %+v, want v0.3 JSON-RPC and HTTP+JSON", rep.Interfaces)
	}
	if !rep.OK() {
		t.Fatalf("verdict %s, want pass; failed: %+v", rep.Verdict, rep.Failed())
	}
	for _, iface := range rep.Interfaces {
		for _, id := range []string{"malformed-keys", "replay", "key-reuse", "lost-answer", "concurrent", "stream-retry", "retry-during-run", "unkeyed"} {
			if r, _ := rep.Result(id, iface.String()); r.Status != servercheck.Pass {
				t.Errorf("%s on %s: %s (%s), want pass", id, iface, r.Status, r.Detail)
			}
		}
	}
	srv.Close()
	runs.KeyedOnce(t)
}
