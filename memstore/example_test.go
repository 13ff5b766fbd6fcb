package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
)

// A first send claims its key and binds it to the task it created; a retry of the same
// message finds the task instead of running the agent again, and a different message
// that reuses the key is refused.
func Example() {
	ctx := context.Background()
	index := memstore.New(memstore.Options{})
	const scope, key = "tenant-a", "4f1c0b9e7d2a4c6b8e0f1a2b3c4d5e6f"

	first, err := index.Claim(ctx, scope, key, "msg-1", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first send:", first.Status)
	if err := index.Bind(ctx, scope, key, first.Token, idempotency.Binding{TaskID: "task-42"}); err != nil {
		log.Fatal(err)
	}

	retry, err := index.Claim(ctx, scope, key, "msg-1", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retry:", retry.Status, "task:", retry.Record.TaskID)

	other, err := index.Claim(ctx, scope, key, "msg-2", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("other message:", other.Status)
	// Output:
	// first send: claimed
	// retry: held by same message task: task-42
	// other message: held by other message
}

// A scope that holds as many keys as the store allows refuses new claims with an error
// wrapping idempotency.ErrFull, until keys expire.
func ExampleOptions_maxKeysPerScope() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	index := memstore.New(memstore.Options{
		TTL:             time.Hour,
		MaxKeysPerScope: 1,
		Now:             func() time.Time { return now },
	})

	c, _ := index.Claim(ctx, "", idempotency.NewKey(), "msg-1", time.Minute)
	fmt.Println(c.Status)
	_, err := index.Claim(ctx, "", idempotency.NewKey(), "msg-2", time.Minute)
	fmt.Println(errors.Is(err, idempotency.ErrFull))

	now = now.Add(time.Hour) // the first key expires
	c, _ = index.Claim(ctx, "", idempotency.NewKey(), "msg-2", time.Minute)
	fmt.Println(c.Status)
	// Output:
	// claimed
	// true
	// claimed
}
