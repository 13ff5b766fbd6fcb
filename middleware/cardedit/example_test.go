package cardedit_test

import (
	"fmt"

	"github.com/a2akit/idempotency/middleware/cardedit"
)

func ExampleAddExtension() {
	card := []byte(`{"name":"Echo","capabilities":{"streaming":true},"skills":[]}`)
	out, outcome := cardedit.AddExtension(card, "https://example.com/ext/v1", []byte(`{"uri":"https://example.com/ext/v1"}`))
	fmt.Println(outcome == cardedit.Added, string(out))
	// Output:
	// true {"name":"Echo","capabilities":{"streaming":true,"extensions":[{"uri":"https://example.com/ext/v1"}]},"skills":[]}
}

func ExampleRewriteInterfaceURLs() {
	card := []byte(`{"name":"Echo","supportedInterfaces":[{"url":"http://127.0.0.1:8080/rpc","protocolBinding":"JSONRPC"}]}`)
	out, _ := cardedit.RewriteInterfaceURLs(card, func(string) string { return "https://agents.example.com/echo" })
	fmt.Println(string(out))
	// Output:
	// {"name":"Echo","supportedInterfaces":[{"url":"https://agents.example.com/echo","protocolBinding":"JSONRPC"}]}
}
