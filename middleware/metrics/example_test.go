package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

// The collector observes the middleware's keyed sends and serves them at /metrics.
func Example() {
	c := metrics.New()
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Observe: c.Observe})
	if err != nil {
		panic(err)
	}
	// A stand-in for an A2A server: its agent answers every send with a Message.
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"reply-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}`)
	})
	mux := http.NewServeMux()
	mux.Handle("/", mw(server))
	mux.Handle("GET /metrics", c)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"msg-1",` +
		`"role":"ROLE_USER","parts":[{"text":"book it"}],"metadata":{"` + idempotency.MetadataKey + `":"order-7f3a9c1e5b2d4a60"}}}}`
	for range 2 { // a first send and its retry
		resp, err := http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(send))
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		// Every series of the two counters is there from the start; print those that counted.
		counted := !strings.HasSuffix(line, " 0\n")
		if counted && (strings.HasPrefix(line, metrics.SendsTotal) || strings.HasPrefix(line, metrics.KeysBoundTotal)) {
			fmt.Print(line)
		}
	}
	// Output:
	// a2a_idempotency_sends_total{binding="JSONRPC",outcome="claimed",protocol_version="1.0",streaming="false"} 1
	// a2a_idempotency_sends_total{binding="JSONRPC",outcome="replayed",protocol_version="1.0",streaming="false"} 1
	// a2a_idempotency_keys_bound_total{bound_by="answer"} 1
}
