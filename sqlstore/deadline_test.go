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
// returned func is called. The deadline is 300 ms away, or far when far is set (past
// the second beyond which a SQLite statement runs without go-sqlite3's interrupt: the
// store must still stop waiting at the deadline, not at its 5 s bound on busy waits).
func testBlockedDeadline(t *testing.T, db *database, far bool, lock func(t *testing.T, table string) (unlock func())) {
	a, b := db.stores(t, sqlstore.Options{})
	mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	unlock := lock(t, a.Table())
	deadline := 300 * time.Millisecond
	if far {
		deadline = 1500 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	c, err := b.Claim(ctx, "", key(1), "m2", lease)
	elapsed := time.Since(start)
	unlock()
	if !errors.Is(err, context.DeadlineExceeded) || c.Status == idempotency.Claimed {
		t.Errorf("blocked Claim = %v, %v; want context.DeadlineExceeded", c.Status, err)
	}
	if elapsed > deadline+2700*time.Millisecond {
		t.Errorf("blocked Claim returned after %v, long past its %v deadline", elapsed, deadline)
	}
	mustClaim(t, b, "", key(1), "m2", idempotency.HeldByOtherMessage)
}
