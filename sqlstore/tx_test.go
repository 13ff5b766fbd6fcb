package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// testEndLeases: EndLeases ends the lease of every pending claim (the next identical
// claim takes it over at once), and of nothing else: bound keys stay bound, and
// claims made after it run their own lease. On the Go clock and the database's.
func testEndLeases(t *testing.T, d *database) {
	for _, goClock := range []bool{false, true} {
		ctx := context.Background()
		opts := sqlstore.Options{}
		if goClock {
			opts.Now = newClock().Now
		}
		s, _ := d.stores(t, opts)
		pending, bound := idempotency.NewKey(), idempotency.NewKey()
		if _, err := s.Claim(ctx, "", pending, "m1", time.Hour); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, "", bound, "m2", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Bind(ctx, "", bound, c.Token, idempotency.Binding{TaskID: "t2"}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.EndLeases(ctx); err != nil || n != 1 {
			t.Fatalf("EndLeases (go clock %v): %d, %v; want 1", goClock, n, err)
		}
		if c, err := s.Claim(ctx, "", pending, "m1", time.Hour); err != nil || c.Status != idempotency.Claimed {
			t.Errorf("claim after EndLeases (go clock %v): %+v, %v; want a takeover", goClock, c, err)
		}
		if c, err := s.Claim(ctx, "", bound, "m2", time.Hour); err != nil || c.Status != idempotency.HeldBySameMessage || c.Record.TaskID != "t2" {
			t.Errorf("bound key after EndLeases (go clock %v): %+v, %v; want it bound", goClock, c, err)
		}
		if c, err := s.Claim(ctx, "", pending, "m1", time.Hour); err != nil || c.Status != idempotency.HeldBySameMessage {
			t.Errorf("claim after the takeover (go clock %v): %+v, %v; want the new lease to hold", goClock, c, err)
		}
	}
}
