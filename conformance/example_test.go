package conformance_test

import (
	"context"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/memstore"
)

// A Clock drives an index's time from a test: give the index its Now and the Harness
// its Advance, and a lease ends when the test says so, without sleeping. This is how
// a store's conformance test offers the controllable clock (see the package
// documentation for the whole test).
func ExampleClock() {
	ctx := context.Background()
	clock := conformance.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	ix := memstore.New(memstore.Options{Now: clock.Now})
	key := idempotency.NewKey()

	first, err := ix.Claim(ctx, "", key, "message-1", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first send:", first.Status)

	clock.Advance(30 * time.Second)
	retry, _ := ix.Claim(ctx, "", key, "message-1", time.Minute)
	fmt.Println("retry within the lease:", retry.Status)

	clock.Advance(time.Minute)
	takeover, _ := ix.Claim(ctx, "", key, "message-1", time.Minute)
	fmt.Println("retry after the lease:", takeover.Status, "with a new token:", takeover.Token != first.Token)

	// Output:
	// first send: claimed
	// retry within the lease: held by same message
	// retry after the lease: claimed with a new token: true
}
