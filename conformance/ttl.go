package conformance

import (
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

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

// checkTTLBoundary: a key counts as absent from exactly its claim time plus the TTL:
// held a margin before, absent at that instant (needs Harness.Advance and Harness.TTL).
func checkTTLBoundary(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key := e.key()
	if _, err := e.ownBound("", key, msgA, boundA); err != nil {
		return err
	}
	tl := e.since(time.Now())
	tl.to(ttl - m)
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("%v before the TTL: %w", m, err)
	}
	tl.to(ttl)
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("at the instant the TTL ends (a key lives [claim time, claim time + TTL)): %w", err)
	}
	return nil
}

// checkTTLRetrySameMessage: a retry of the same message after the TTL of its bound
// key is a new claim: Claimed, with a new token, a claim time of its own and nothing
// bound; its TTL runs from the new claim.
func checkTTLRetrySameMessage(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key := e.key()
	old, err := e.ownBound("", key, msgA, boundA)
	if err != nil {
		return err
	}
	r1, err := e.wantHeld("", key, msgA, boundA)
	if err != nil {
		return err
	}
	tl := e.since(time.Now())
	tl.to(ttl + m)
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("a retry of the same message %v after the TTL of its bound key: %w", m, err)
	}
	if tok == old {
		return fmt.Errorf("a claim after the TTL got the expired claim's token %d; want a new one", tok)
	}
	r2, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return fmt.Errorf("a retry of the same message after the TTL is a new claim, with nothing bound: %w", err)
	}
	if r2.ClaimedAt.Sub(r1.ClaimedAt) < ttl {
		return fmt.Errorf("a claim %v after the TTL reports ClaimedAt %v, %v after the expired claim's; want its own claim time",
			m, r2.ClaimedAt, r2.ClaimedAt.Sub(r1.ClaimedAt))
	}
	tl.to(ttl + m + ttl - m)
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return fmt.Errorf("%v before the TTL of the new claim: %w", m, err)
	}
	return nil
}

// checkReclaimAfterRelease: a key claimed again after a Release is a new claim: its
// ClaimedAt is the new claim's, and its TTL runs from it.
func checkReclaimAfterRelease(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key, tok, r1, err := e.claimedRecord()
	if err != nil {
		return err
	}
	tl := e.since(time.Now())
	tl.to(ttl / 2)
	if err := e.release("", key, tok); err != nil {
		return err
	}
	if _, err := e.ownBound("", key, msgB, boundB); err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	r2, err := e.wantHeld("", key, msgB, boundB)
	if err != nil {
		return err
	}
	if r2.ClaimedAt.Sub(r1.ClaimedAt) < ttl/2-time.Second {
		return fmt.Errorf("a key claimed %v after a claim that was released reports ClaimedAt %v after the released claim's; "+
			"want the new claim's time (a released key is absent, and its next claim is new)", ttl/2, r2.ClaimedAt.Sub(r1.ClaimedAt))
	}
	tl.to(ttl + m)
	if _, err := e.wantHeld("", key, msgB, boundB); err != nil {
		return fmt.Errorf("%v after the TTL of the released claim, well within the new claim's: %w", m, err)
	}
	return nil
}

// checkBindAfterTTL: past its TTL a pending key is no longer held: its owner's Bind
// returns ErrNotOwner and does not bring the key back, and Release returns nil.
func checkBindAfterTTL(e *env) error {
	ttl, m := e.h.TTL, e.ttlMargin()
	key := e.key()
	tok, err := e.own("", key, msgA, e.ttlLease())
	if err != nil {
		return err
	}
	e.since(time.Now()).to(ttl + m)
	err = e.ix.Bind(e.ctx, "", key, tok, boundA)
	if err := wantErr(fmt.Sprintf("Bind(%s) by the owner %v after the key's TTL", where("", key), m), err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("after a Bind past the TTL: %w", err)
	}
	if err := e.ix.Release(e.ctx, "", key, tok); err != nil {
		return fmt.Errorf("Release(%s) by the owner after the key's TTL = %w; want nil (the key is not held)", where("", key), err)
	}
	return nil
}
