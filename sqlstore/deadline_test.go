package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// testBlockedDeadline: a claim that waits for a lock another connection holds gives up
// at its context's deadline, reports an error that errors.Is finds
// context.DeadlineExceeded in, and claims nothing. lock holds the lock until the
// returned func is called.
func testBlockedDeadline(t *testing.T, db *database, lock func(t *testing.T, table string) (unlock func())) {
	a, b := db.stores(t, sqlstore.Options{})
	mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	unlock := lock(t, a.Table())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := b.Claim(ctx, "", key(1), "m2", lease)
	elapsed := time.Since(start)
	unlock()
	if !errors.Is(err, context.DeadlineExceeded) || c.Status == idempotency.Claimed {
		t.Errorf("blocked Claim = %v, %v; want context.DeadlineExceeded", c.Status, err)
	}
	if elapsed > 3*time.Second {
		t.Errorf("blocked Claim returned after %v, long past its 300ms deadline", elapsed)
	}
	mustClaim(t, b, "", key(1), "m2", idempotency.HeldByOtherMessage)
}
