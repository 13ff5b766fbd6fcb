package middleware_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// A first keyed send is forwarded; its retry gets the same answer without reaching
// the server; a different message with the same key is refused.
func Example() {
	// A stand-in for an A2A server: its agent answers every send with a Message.
	calls := 0
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"reply-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}`+"\n")
	})
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(mw(server))
	defer srv.Close()

	send := func(id int, messageID string) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":%q,`+
			`"role":"ROLE_USER","parts":[{"text":"book it"}],"metadata":{%q:"order-7f3a9c1e5b2d4a60"}}}}`,
			id, messageID, idempotency.MetadataKey)
		resp, err := http.Post(srv.URL+"/rpc", "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}

	fmt.Println(send(1, "msg-1"))
	fmt.Println(send(2, "msg-1"))
	var refusal struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(send(3, "msg-2")), &refusal)
	fmt.Println(refusal.Error.Code, strings.Contains(refusal.Error.Message, "already held"))
	fmt.Println("server calls:", calls)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"reply-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}
	// {"jsonrpc":"2.0","id":2,"result":{"message":{"messageId":"reply-1","role":"ROLE_AGENT","parts":[{"text":"done"}]}}}
	// -32602 true
	// server calls: 1
}

// The agent card lists the extension when the index can honour keys.
func Example_agentCard() {
	card := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"Echo","capabilities":{"streaming":true}}`)
	})
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(mw(card))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/.well-known/agent-card.json")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Capabilities struct {
			Streaming  bool `json:"streaming"`
			Extensions []struct {
				URI      string `json:"uri"`
				Required bool   `json:"required"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	json.NewDecoder(resp.Body).Decode(&got)
	fmt.Printf("%+v\n", got.Capabilities)
	// Output:
	// {Streaming:true Extensions:[{URI:https://a2a-rust.com/extensions/idempotency/v1 Required:false}]}
}

// keyedRESTSend returns an HTTP+JSON send of message messageID with key, naming no
// tenant in its body, as clients that put the tenant only in the path send it.
func keyedRESTSend(path, messageID, key string) *http.Request {
	body := fmt.Sprintf(`{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":"book it"}],`+
		`"metadata":{%q:%q}}}`, messageID, idempotency.MetadataKey, key)
	return httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
}

// replyServer stands for an HTTP+JSON A2A server whose agent answers every send with
// a Message; it counts its calls.
func replyServer(calls *int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"message":{"messageId":"reply","role":"ROLE_AGENT","parts":[{"text":"done"}]}}`+"\n")
	})
}

// A server that takes the tenant from the path (mounted at /t, as a2a-go's
// NewTenantRESTHandler serves it) keeps one scope per tenant: the same key sent for
// two tenants runs twice, and each tenant's retry runs nothing. (The default routes,
// /tenants/{*} then /{*}, need no Scope at all.)
func ExampleTenantRoutes() {
	calls := 0
	routes, err := middleware.NewTenantRoutes("/t/{*}")
	if err != nil {
		log.Fatal(err)
	}
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{
		Scope:   routes.Scope,
		Observe: func(e middleware.Event) { fmt.Printf("%s in scope %q\n", e.Outcome, e.Scope) },
	})
	if err != nil {
		log.Fatal(err)
	}
	h := mw(replyServer(&calls))
	for _, path := range []string{"/t/acme/message:send", "/t/globex/message:send", "/t/acme/message:send"} {
		h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend(path, "msg-1", "order-7f3a9c1e5b2d4a60"))
	}
	fmt.Println("server calls:", calls)
	// Output:
	// claimed in scope "acme"
	// claimed in scope "globex"
	// replayed in scope "acme"
	// server calls: 2
}

// Observe receives one Event per keyed send: what the middleware did with it, over
// which binding and protocol version. Unkeyed sends are not observed.
func ExampleOptions_observe() {
	calls := 0
	counts := map[middleware.Outcome]int{}
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{
		Observe: func(e middleware.Event) {
			counts[e.Outcome]++
			fmt.Println(e.Outcome, e.Binding, e.Version, e.Streaming)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := mw(replyServer(&calls))
	h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend("/message:send", "msg-1", "order-7f3a9c1e5b2d4a60"))
	h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend("/message:stream", "msg-1", "order-7f3a9c1e5b2d4a60"))
	h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend("/message:send", "msg-2", "order-7f3a9c1e5b2d4a60"))
	h.ServeHTTP(httptest.NewRecorder(), keyedRESTSend("/message:send", "msg-3", "short"))
	fmt.Println(counts[middleware.OutcomeClaimed], counts[middleware.OutcomeReplayed], counts[middleware.OutcomeConflict],
		counts[middleware.OutcomeRefused], "server calls:", calls)
	// Output:
	// claimed HTTP+JSON 1.0 false
	// replayed HTTP+JSON 1.0 true
	// conflict HTTP+JSON 1.0 false
	// refused HTTP+JSON 1.0 false
	// 1 1 1 1 server calls: 1
}
