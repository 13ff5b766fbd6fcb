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

// checkLateBindWithoutTakeover: an owner whose lease ended, but whose claim nobody
// took over, still owns it and can bind it.
func checkLateBindWithoutTakeover(e *env) error {
	key, lease := e.key(), e.lease()
	start := time.Now()
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
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
	key, lease := e.key(), e.lease()
	start := time.Now()
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
	if _, err := e.wantSame("", key, msgA, boundA); err != nil {
		return fmt.Errorf("after the lease of a bound key ended: %w", err)
	}
	if err := e.wantOther("", key, msgB); err != nil {
		return fmt.Errorf("after the lease of a bound key ended: %w", err)
	}
	if err := e.release("", key, tok); err != nil {
		return fmt.Errorf("of a bound key after its lease ended: %w", err)
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
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

// checkTTLExpiresKey: shortly before the time to live, a bound key is fully held; past
// it, bound and pending keys count as absent, another message can claim them, and
// the old owner's token no longer binds.
func checkTTLExpiresKey(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key, pend := e.key(), e.key()
	start := time.Now()
	tok, err := e.ownBound("", key, msgA, boundA)
	if err != nil {
		return err
	}
	pendTok, err := e.own("", pend, msgA, e.ttlLease())
	if err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(ttl - m)
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	if _, err := e.wantSame("", key, msgA, boundA); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	if err := e.wantOther("", key, msgB); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	tl.to(ttl + m)
	for _, k := range []string{key, pend} {
		if err := e.wantAbsent("", k); err != nil {
			return fmt.Errorf("%v after the TTL: %w", m, err)
		}
	}
	if _, err := e.own("", key, msgB, longLease); err != nil {
		return fmt.Errorf("%v after the TTL of a bound key: %w", m, err)
	}
	err = e.ix.Bind(e.ctx, "", key, tok, boundA)
	if err := wantErr("Bind with the token of an expired claim, after another message claimed the key", err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	if _, err := e.own("", pend, msgB, longLease); err != nil {
		return fmt.Errorf("%v after the TTL of a pending key: %w", m, err)
	}
	err = e.ix.Release(e.ctx, "", pend, pendTok)
	return wantErr("Release with the token of an expired claim, after another message claimed the key", err, idempotency.ErrNotOwner)
}

// checkTTLNotExtendedByReplay: the time to live runs from the first claim; a retry
// halfway through does not extend it.
func checkTTLNotExtendedByReplay(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key := e.key()
	start := time.Now()
	if _, err := e.ownBound("", key, msgA, boundA); err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(ttl / 2)
	if _, err := e.wantSame("", key, msgA, boundA); err != nil {
		return fmt.Errorf("halfway through the TTL: %w", err)
	}
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("halfway through the TTL: %w", err)
	}
	tl.to(ttl + m)
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("%v after the TTL counted from the first claim (a retry must not extend it): %w", m, err)
	}
	return nil
}

// checkTTLNotExtendedByTakeover: a takeover keeps the original claim time, so the key
// still expires a TTL after its first claim.
func checkTTLNotExtendedByTakeover(e *env) error {
	ttl, m, lease := e.h.TTL, e.ttlMargin(), e.ttlLease()
	key := e.key()
	start := time.Now()
	if _, err := e.own("", key, msgA, lease); err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(lease + lease/2)
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return fmt.Errorf("after the lease ended: %w", err)
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return err
	}
	tl.to(ttl - m)
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	tl.to(ttl + m)
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("%v after the TTL counted from the first claim (a takeover must keep the claim time): %w", m, err)
	}
	return nil
}
