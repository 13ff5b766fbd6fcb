package conformance

import (
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// checkLeaseHeldBeforeEnd: shortly before the lease ends, a retry of the same message
// still sees the pending claim; it does not take it over.
func checkLeaseHeldBeforeEnd(e *env) error {
	_, _, err := e.retryBeforeLeaseEnds()
	return err
}

// retryBeforeLeaseEnds claims a fresh key as msgA with a lease meant to end during the
// check, and shortly before it ends wants a retry of the same message to see the
// pending claim. It returns the key and the claim's timeline.
func (e *env) retryBeforeLeaseEnds() (string, *timeline, error) {
	key, lease := e.key(), e.lease()
	start := time.Now()
	if _, err := e.own("", key, msgA, lease); err != nil {
		return "", nil, err
	}
	tl := e.since(start)
	tl.to(lease - e.margin())
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		if tl.overran(lease) {
			return "", nil, stalled("the retry", lease)
		}
		return "", nil, fmt.Errorf("%v before the lease ended: %w", e.margin(), err)
	}
	return key, tl, nil
}

// checkLeaseTakeover: after the lease ends, a retry of the same message takes the
// pending claim over: Claimed with a new token, the original claim time kept, and a
// full lease of its own. The old token is then fenced out: Bind and Release with it
// return ErrNotOwner and change nothing.
func checkLeaseTakeover(e *env) error {
	key, lease := e.key(), e.lease()
	start := time.Now()
	old, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	tl := e.since(start)
	r1, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	tl.to(lease + e.margin())

	start = time.Now()
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return fmt.Errorf("%v after the lease ended: %w", e.margin(), err)
	}
	if tok == old {
		return fmt.Errorf("takeover returned the old token %d; want a new one", tok)
	}
	tl = e.since(start)
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		if tl.overran(lease) {
			return stalled("the retry after the takeover", lease)
		}
		return fmt.Errorf("right after a takeover (the new owner's lease runs from the takeover): %w", err)
	}
	r2, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if !r2.ClaimedAt.Equal(r1.ClaimedAt) {
		return fmt.Errorf("ClaimedAt changed on takeover from %v to %v; want the time of the first claim", r1.ClaimedAt, r2.ClaimedAt)
	}

	if err := e.wantFenced(key, old, "the token of the claim taken over"); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return fmt.Errorf("after Bind and Release with the old token: %w", err)
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return fmt.Errorf("by the new owner: %w", err)
	}
	_, err = e.wantSame("", key, msgA, boundA)
	return err
}

// checkLeaseOtherMessageNoTakeover: after the lease ends, a different message still
// gets HeldByOtherMessage: only a retry of the same message takes over.
func checkLeaseOtherMessageNoTakeover(e *env) error {
	key, lease := e.key(), e.lease()
	start := time.Now()
	if _, err := e.own("", key, msgA, lease); err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
	if err := e.wantOther("", key, msgB); err != nil {
		return fmt.Errorf("after the lease ended: %w", err)
	}
	_, err := e.wantHeld("", key, msgA, pending)
	return err
}

// abandon claims n fresh keys of scope as msgA with a lease meant to end during the
// check, lets it end, and returns the keys and their owners' tokens.
func (e *env) abandon(scope string, n int) ([]string, []idempotency.Token, error) {
	lease := e.lease()
	keys := make([]string, n)
	toks := make([]idempotency.Token, n)
	start := time.Now()
	for i := range keys {
		keys[i] = e.key()
		tok, err := e.own(scope, keys[i], msgA, lease)
		if err != nil {
			return nil, nil, fmt.Errorf("claim %d of %d: %w", i+1, n, err)
		}
		toks[i] = tok
	}
	e.since(start).to(lease + e.margin())
	return keys, toks, nil
}

// checkLateBindWithoutTakeover: an owner whose lease ended, but whose claim nobody
// took over, still owns it and can bind it.
func checkLateBindWithoutTakeover(e *env) error {
	keys, toks, err := e.abandon("", 1)
	if err != nil {
		return err
	}
	key, tok := keys[0], toks[0]
	if err := e.bind("", key, tok, boundA); err != nil {
		return fmt.Errorf("after the lease ended, nobody having taken the claim over: %w", err)
	}
	_, err = e.wantSame("", key, msgA, boundA)
	return err
}

// checkBoundKeyNeverTakenOver: once bound, a key is kept past its lease: a retry of
// the same message gets the task rather than a takeover, Release changes nothing,
// and another message is refused.
func checkBoundKeyNeverTakenOver(e *env) error {
	keys, lease := []string{e.key(), e.key()}, e.lease()
	bindings := []idempotency.Binding{boundA, repliedA}
	toks := make([]idempotency.Token, len(keys))
	start := time.Now()
	for i, key := range keys {
		tok, err := e.own("", key, msgA, lease)
		if err != nil {
			return err
		}
		if err := e.bind("", key, tok, bindings[i]); err != nil {
			return err
		}
		toks[i] = tok
	}
	e.since(start).to(lease + e.margin())
	for i, key := range keys {
		b := bindings[i]
		if _, err := e.wantSame("", key, msgA, b); err != nil {
			return fmt.Errorf("after the lease of a key bound to %s ended: %w", describeBinding(b), err)
		}
		if err := e.wantOther("", key, msgB); err != nil {
			return fmt.Errorf("after the lease of a key bound to %s ended: %w", describeBinding(b), err)
		}
		if err := e.release("", key, toks[i]); err != nil {
			return fmt.Errorf("of a key bound to %s after its lease ended: %w", describeBinding(b), err)
		}
		if _, err := e.wantHeld("", key, msgA, b); err != nil {
			return err
		}
	}
	return nil
}

// checkLeaseNotExtendedByReplay: a retry of the same message does not extend the
// lease of a pending claim: the claim can still be taken over when the original
// lease ends.
func checkLeaseNotExtendedByReplay(e *env) error {
	key, tl, err := e.retryBeforeLeaseEnds()
	if err != nil {
		return err
	}
	lease := e.lease()
	tl.to(lease + e.margin())
	if _, err := e.own("", key, msgA, lease); err != nil {
		return fmt.Errorf("%v after the original lease ended (a retry must not extend it): %w", e.margin(), err)
	}
	return nil
}

// checkTakeoverLease: a takeover's lease is the lease passed to the Claim that took
// over, counted from the takeover: a takeover with a lease three times the first one's
// is still held when the first lease's length has passed again, is taken over once its
// own lease ends, and Record.LeaseExpiresAt reports that end.
func checkTakeoverLease(e *env) error {
	key, lease, m := e.key(), e.lease(), e.margin()
	start := time.Now()
	if _, err := e.own("", key, msgA, lease); err != nil {
		return err
	}
	tl := e.since(start)
	r1, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	tl.to(lease + m)
	before := time.Now()
	if _, err := e.own("", key, msgA, 3*lease); err != nil {
		return fmt.Errorf("%v after the lease ended: %w", m, err)
	}
	after := time.Now()
	r2, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	// The takeover happened lease+m after the first claim on the controllable clock;
	// on the real clock, somewhere in [before, after] of the test's clock, which the
	// index's may not share, so only the length is judged against the claim time.
	lo, hi := lease+m+3*lease-time.Second, lease+m+3*lease+time.Second
	if !e.clock() {
		lo, hi = before.Sub(tl.origin)+3*lease-m, after.Sub(tl.start)+3*lease+m
	}
	if got := r2.LeaseExpiresAt.Sub(r1.ClaimedAt); got < lo || got > hi || !r2.LeaseExpiresAt.After(r1.LeaseExpiresAt) {
		return fmt.Errorf("after a takeover with lease %v at %v, Lookup reports a lease ending %v after the first claim (%s); "+
			"want the takeover's own lease, counted from the takeover: about %v",
			3*lease, lease+m, got, describeRecord(r2), lease+m+3*lease)
	}
	tl.to(lease + m + 2*lease)
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		if tl.overran(lease + m + 3*lease) {
			return stalled("the retry", lease+m+3*lease)
		}
		return fmt.Errorf("%v after a takeover with lease %v (the lease is the takeover's, not the first claim's): %w", 2*lease, 3*lease, err)
	}
	tl.to(lease + m + 3*lease + m)
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return fmt.Errorf("%v after the lease of %v of a takeover ended: %w", m, 3*lease, err)
	}
	return nil
}

// checkLeaseBoundary: the lease ends exactly at claim time plus lease: a retry 5
// seconds before is held, one at that instant takes over (needs Harness.Advance).
func checkLeaseBoundary(e *env) error {
	key, lease := e.key(), clockLease
	if _, err := e.own("", key, msgA, lease); err != nil {
		return err
	}
	tl := e.since(time.Now())
	tl.to(lease - clockMargin)
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		return fmt.Errorf("%v before the lease ends: %w", clockMargin, err)
	}
	tl.to(lease)
	if _, err := e.own("", key, msgA, lease); err != nil {
		return fmt.Errorf("at the instant the lease ends (it runs out at claim time plus lease, "+
			"so compare now >= lease end, not now > lease end): %w", err)
	}
	return nil
}

// checkLeaseSubSecond: a lease shorter than a second is kept, not cut to whole
// seconds (to none): a claim with a lease of 400ms is held right away, on a clock that
// has not moved, and taken over once it ended (needs Harness.Advance). An index that
// stores whole seconds passes when it rounds such a lease up.
func checkLeaseSubSecond(e *env) error {
	key, lease := e.key(), 400*time.Millisecond
	if _, err := e.own("", key, msgA, lease); err != nil {
		return err
	}
	tl := e.since(time.Now())
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		return fmt.Errorf("right after a claim with lease %v (a lease cut to whole seconds is no lease): %w", lease, err)
	}
	tl.to(lease + clockMargin)
	if _, err := e.own("", key, msgA, lease); err != nil {
		return fmt.Errorf("%v after a lease of %v ended: %w", clockMargin, lease, err)
	}
	return nil
}
