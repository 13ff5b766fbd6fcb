package servercheck_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/servercheck"
)

// Check a server: here an a2a-go server behind the kit, on loopback; in your CI, the
// URL of your deployment.
func Example() {
	srv, err := testkit.Start(testkit.Config{Index: memstore.New(memstore.Options{})})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	rep, err := servercheck.Run(context.Background(), srv.URL, servercheck.Options{Only: []string{"replay", "key-reuse"}})
	if err != nil {
		panic(err) // the card could not be read
	}
	for _, r := range rep.Results {
		binding := "card"
		if r.Interface != "" {
			binding = strings.Fields(r.Interface)[0]
		}
		fmt.Println(r.ID, binding, r.Status)
	}
	fmt.Println("verdict:", rep.Verdict)
	// Output:
	// card card pass
	// replay JSONRPC pass
	// key-reuse JSONRPC pass
	// replay HTTP+JSON pass
	// key-reuse HTTP+JSON pass
	// verdict: pass
}
