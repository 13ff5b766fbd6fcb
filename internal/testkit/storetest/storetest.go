// Package storetest holds the tests of Extend that the kit's server-backed stores
// (sqlstore, redisstore) run alike, each on two handles of one store (two pools or
// two clients, as two replicas would hold): exact lease ends read back across
// handles, and extensions judged by the server's clock. The conformance suite judges
// the contract on any index; these pin what only a shared server shows.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
)

func key(i int) string { return fmt.Sprintf("storetest-key-%04d", i) }

func mustClaim(t *testing.T, s idempotency.KeyIndex, k string, lease time.Duration, want idempotency.ClaimStatus) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), "", k, "m1", lease)
	if err != nil {
		t.Fatalf("Claim(%q): %v", k, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q) = %v, want %v", k, c.Status, want)
	}
	return c
}

// Extend checks, on a and b (two handles of one store whose Now is clk.Now), that the
// owner moves the lease end to exactly now+lease, read back through the other handle,
// and that a lease that ended, a takeover, a bind or a release fence the token out;
// a zero token or a lease not above zero is ErrInvalidArgument.
func Extend(t *testing.T, a, b idempotency.KeyIndex, clk *conformance.Clock, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	notOwner := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("%s = %v, want ErrNotOwner", what, err)
		}
	}
	first := mustClaim(t, a, key(1), lease, idempotency.Claimed)
	claimedAt := clk.Now()
	clk.Advance(lease / 2)
	if err := a.Extend(ctx, "", key(1), first.Token, 3*lease); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	rec, _, err := b.Lookup(ctx, "", key(1))
	if err != nil || !rec.LeaseExpiresAt.Equal(clk.Now().Add(3*lease)) || !rec.ClaimedAt.Equal(claimedAt) {
		t.Fatalf("after Extend: %+v, %v; want lease end %v and claim time %v", rec, err, clk.Now().Add(3*lease), claimedAt)
	}
	clk.Advance(3*lease - time.Microsecond)
	mustClaim(t, b, key(1), lease, idempotency.HeldBySameMessage) // the extended lease still runs
	notOwner("Extend(other token)", b.Extend(ctx, "", key(1), first.Token+1, lease))
	clk.Advance(time.Microsecond)
	notOwner("Extend(lease ended, nobody took over)", a.Extend(ctx, "", key(1), first.Token, lease))
	second := mustClaim(t, b, key(1), lease, idempotency.Claimed)
	notOwner("Extend(after takeover)", a.Extend(ctx, "", key(1), first.Token, lease))
	if err := b.Extend(ctx, "", key(1), second.Token, lease); err != nil {
		t.Errorf("Extend(new token): %v", err)
	}
	if err := b.Bind(ctx, "", key(1), second.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	notOwner("Extend(bound)", b.Extend(ctx, "", key(1), second.Token, lease))

	third := mustClaim(t, a, key(2), lease, idempotency.Claimed)
	if err := a.Release(ctx, "", key(2), third.Token); err != nil {
		t.Fatal(err)
	}
	notOwner("Extend(released)", a.Extend(ctx, "", key(2), third.Token, lease))
	notOwner("Extend(never claimed)", a.Extend(ctx, "", key(3), third.Token, lease))
	for _, c := range []struct {
		token idempotency.Token
		lease time.Duration
	}{{0, lease}, {third.Token, 0}, {third.Token, -time.Second}} {
		if err := a.Extend(ctx, "", key(2), c.token, c.lease); !errors.Is(err, idempotency.ErrInvalidArgument) {
			t.Errorf("Extend(token %d, lease %v) = %v, want ErrInvalidArgument", c.token, c.lease, err)
		}
	}
}

// ExtendByServerClock checks, on a and b (two handles of one store without
// Options.Now), that extensions are judged and counted by the server's clock: a lease
// of short kept alive by a, every short/4 for 1.25 leases, is never taken over by b,
// and one then left to end is. short must hold a sleep of short/4 and the round trips
// of a loaded machine.
func ExtendByServerClock(t *testing.T, a, b idempotency.KeyIndex, short time.Duration) {
	t.Helper()
	ctx := context.Background()
	c := mustClaim(t, a, key(1), short, idempotency.Claimed)
	for range 5 { // 1.25 leases in all: past the first lease
		time.Sleep(short / 4)
		if err := a.Extend(ctx, "", key(1), c.Token, short); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		mustClaim(t, b, key(1), time.Minute, idempotency.HeldBySameMessage)
	}
	time.Sleep(short + short/4)
	if err := a.Extend(ctx, "", key(1), c.Token, time.Minute); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Extend after the lease ended = %v, want ErrNotOwner", err)
	}
	mustClaim(t, b, key(1), time.Minute, idempotency.Claimed)
}
