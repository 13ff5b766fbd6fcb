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
