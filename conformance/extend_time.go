package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// checkExtendFromNow: an extension counts from now, not from the claim nor from the
// lease's end, and may shorten the lease as well as lengthen it. A claim extended a
// margin after it was made by twice its lease is held past its first lease's end, is
// taken over once the extension ended, and LeaseExpiresAt reports the extension's end;
// a claim of four leases extended by one is taken over once that one has passed.
func checkExtendFromNow(e *env) error {
	lease, m := e.lease(), e.margin()
	long, short := e.key(), e.key()
	start := time.Now()
	ltok, err := e.own("", long, msgA, lease)
	if err != nil {
		return err
	}
	stok, err := e.own("", short, msgA, 4*lease)
	if err != nil {
		return err
	}
	tl := e.since(start)
	r1, err := e.wantHeld("", long, msgA, pending)
	if err != nil {
		return err
	}
	tl.to(m)
	before := time.Now()
	if err := e.extend("", long, ltok, 2*lease); err != nil {
		return err
	}
	after := time.Now()
	if err := e.extend("", short, stok, lease); err != nil {
		return err
	}
	r2, err := e.wantHeld("", long, msgA, pending)
	if err != nil {
		return err
	}
	// As in TakeoverLease: exact on the controllable clock but for an index's whole
	// seconds; on the real clock within what the test's clock can tell.
	lo, hi := m+2*lease-time.Second, m+2*lease+time.Second
	if !e.clock() {
		lo, hi = before.Sub(tl.origin)+2*lease-m, after.Sub(tl.start)+2*lease+m
	}
	if got := r2.LeaseExpiresAt.Sub(r1.ClaimedAt); got < lo || got > hi {
		return fmt.Errorf("after an Extend by %v, %v after the claim, Lookup reports a lease ending %v after the claim (%s); "+
			"want the extension counted from now: about %v", 2*lease, m, got, describeRecord(r2), m+2*lease)
	}
	tl.to(lease + 2*m)
	if _, err := e.wantSame("", long, msgA, pending); err != nil {
		if tl.overran(m + 2*lease) {
			return stalled("the retry", m+2*lease)
		}
		return fmt.Errorf("%v after the first lease of %v ended, the claim having been extended by %v: %w", 2*m, lease, 2*lease, err)
	}
	if _, err := e.own("", short, msgA, longLease); err != nil {
		return fmt.Errorf("%v after a claim of lease %v was extended by %v, a margin after it was made "+
			"(the extension ends then, earlier than the first lease): %w", lease+2*m, 4*lease, lease, err)
	}
	tl.to(2*lease + 2*m)
	if _, err := e.own("", long, msgA, longLease); err != nil {
		return fmt.Errorf("%v after an extension by %v ended (it counts from now, not from the lease's end): %w", m, 2*lease, err)
	}
	return nil
}

// checkExtendBoundary: an extended lease ends at exactly the time of the extension
// plus its lease: a retry a margin before is held; at that instant the owner's Extend
// is refused with ErrNotOwner, changing nothing, and a retry takes the claim over. An
// extension of 400ms is not cut to whole seconds: held at once, taken over 400ms later
// (needs Harness.Advance).
func checkExtendBoundary(e *env) error {
	key, lease, m := e.key(), clockLease, clockMargin
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	tl := e.since(time.Now())
	tl.to(lease - m)
	if err := e.extend("", key, tok, lease); err != nil {
		return fmt.Errorf("%v before the lease ends: %w", m, err)
	}
	end := 2*lease - m
	tl.to(end - m)
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		return fmt.Errorf("%v before the extended lease ends: %w", m, err)
	}
	tl.to(end)
	before, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if err := e.refusedExtend("", key, tok, "its owner's claim at the instant its extended lease ends "+
		"(the lease has ended when now >= LeaseExpiresAt)", msgA, pending, before); err != nil {
		return err
	}
	tok2, err := e.own("", key, msgA, lease)
	if err != nil {
		return fmt.Errorf("at the instant the extended lease ends: %w", err)
	}
	sub := 400 * time.Millisecond
	if err := e.extend("", key, tok2, sub); err != nil {
		return fmt.Errorf("by the owner of the takeover: %w", err)
	}
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		return fmt.Errorf("right after an Extend by %v (an extension cut to whole seconds is none): %w", sub, err)
	}
	tl.to(end + sub)
	if _, err := e.own("", key, msgA, lease); err != nil {
		return fmt.Errorf("at the instant an extension by %v ended: %w", sub, err)
	}
	return nil
}

// checkExtendKeepsClaim: an extension changes nothing but the lease: the claim time
// and the message are as before, the scope counts the same keys, the owner's token
// still binds, a full scope's claim is extended like any other, and, with the TTL,
// the key still expires a TTL after its first claim however far it was extended.
func checkExtendKeepsClaim(e *env) error {
	scope, key := e.scope(), e.key()
	start := time.Now()
	tok, err := e.own(scope, key, msgA, longLease)
	if err != nil {
		return err
	}
	tl := e.since(start)
	r1, err := e.wantHeld(scope, key, msgA, pending)
	if err != nil {
		return err
	}
	c, err := e.capacity()
	counts := err == nil
	for i := range 3 {
		if err := e.extend(scope, key, tok, time.Duration(i+2)*longLease); err != nil {
			return err
		}
	}
	r2, err := e.wantHeld(scope, key, msgA, pending)
	if err != nil {
		return err
	}
	if !r2.ClaimedAt.Equal(r1.ClaimedAt) {
		return fmt.Errorf("ClaimedAt changed on Extend from %v to %v; want the time of the first claim", r1.ClaimedAt, r2.ClaimedAt)
	}
	if counts {
		if _, err := e.wantHeldCount(c, scope, 1); err != nil {
			return fmt.Errorf("after three Extends of the scope's one claim: %w", err)
		}
		if err := e.extendInFullScope(c); err != nil {
			return err
		}
	}
	other := e.key()
	otok, err := e.own(scope, other, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.extend(scope, other, otok, longLease); err != nil {
		return err
	}
	if err := e.bind(scope, other, otok, boundA); err != nil {
		return fmt.Errorf("with the token of the claim, after an Extend (Extend keeps the token): %w", err)
	}
	if !e.clock() || e.h.TTL <= 0 {
		return nil
	}
	ttl, m := e.h.TTL, e.ttlMargin()
	if err := e.extend(scope, key, tok, 2*ttl); err != nil {
		return err
	}
	tl.to(ttl - m)
	if err := e.extend(scope, key, tok, 2*ttl); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	tl.to(ttl)
	if err := e.wantAbsent(scope, key); err != nil {
		return fmt.Errorf("at the TTL counted from the first claim, after an Extend beyond it (Extend keeps the claim time): %w", err)
	}
	return nil
}

// extendInFullScope fills a scope when the index bounds one to a fillable number of
// keys, and wants the owner of one of its pending claims to extend it, the scope
// still counting its bound.
func (e *env) extendInFullScope(c idempotency.CapacityReporter) error {
	scope := e.scope()
	keys, toks, err := e.fill(c, scope)
	var skip *skipError
	switch {
	case errors.As(err, &skip), errors.Is(err, errUnbounded):
		return nil
	case err != nil:
		return err
	}
	if err := e.extend(scope, keys[0], toks[0], 2*longLease); err != nil {
		return fmt.Errorf("in a full scope (Extend adds no key): %w", err)
	}
	if _, err := e.wantHeldCount(c, scope, len(keys)); err != nil {
		return fmt.Errorf("after an Extend in a full scope: %w", err)
	}
	return e.bind(scope, keys[0], toks[0], boundA)
}
