package conformance

import (
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// extend extends the lease of (scope, key) under tok and wants nil.
func (e *env) extend(scope, key string, tok idempotency.Token, lease time.Duration) error {
	if err := e.ix.Extend(e.ctx, scope, key, tok, lease); err != nil {
		return fmt.Errorf("Extend(%s, owner's token, %v): %w", where(scope, key), lease, err)
	}
	return nil
}

// refusedExtend wants Extend of (scope, key) under tok to return ErrNotOwner and to
// leave the key as before says (held by msg with b and the same lease end, or absent
// when before is the zero Record). what says why the extension must be refused.
func (e *env) refusedExtend(scope, key string, tok idempotency.Token, what, msg string, b idempotency.Binding, before idempotency.Record) error {
	err := e.ix.Extend(e.ctx, scope, key, tok, 3*longLease)
	if err := wantErr(fmt.Sprintf("Extend(%s, token %d) of %s", where(scope, key), tok, what), err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	if before.MessageID == "" {
		if err := e.wantAbsent(scope, key); err != nil {
			return fmt.Errorf("after a refused Extend of %s (a late extension never revives a claim): %w", what, err)
		}
		return nil
	}
	if b.TaskID != "" || b.Reply != nil {
		_, err := e.wantHeld(scope, key, msg, b)
		return err
	}
	return e.wantLeaseKept(scope, key, msg, before, "a refused Extend of "+what)
}

// wantLeaseKept looks (scope, key) up and wants it pending, held by msg, with the
// lease end before reported; after names what must have changed nothing.
func (e *env) wantLeaseKept(scope, key, msg string, before idempotency.Record, after string) error {
	r, err := e.wantHeld(scope, key, msg, pending)
	if err != nil {
		return fmt.Errorf("after %s: %w", after, err)
	}
	if !r.LeaseExpiresAt.Equal(before.LeaseExpiresAt) {
		return fmt.Errorf("after %s the lease ends at %v, not %v; want it unchanged", after, r.LeaseExpiresAt, before.LeaseExpiresAt)
	}
	return nil
}

// reclaimed claims key, releases it and claims it again with lease, and returns the
// released claim's token and the new one's.
func (e *env) reclaimed(key string, lease time.Duration) (stale, tok idempotency.Token, err error) {
	if stale, err = e.own("", key, msgA, longLease); err != nil {
		return 0, 0, err
	}
	if err := e.release("", key, stale); err != nil {
		return 0, 0, err
	}
	if tok, err = e.own("", key, msgA, lease); err != nil {
		return 0, 0, fmt.Errorf("after Release: %w", err)
	}
	return stale, tok, nil
}

// checkExtendOnlyOwner: only the owner extends a claim: a token of another claim, one
// never issued, and the token of the claim the key had before a release get
// ErrNotOwner and change no lease; the owner's Extend then succeeds.
func checkExtendOnlyOwner(e *env) error {
	key := e.key()
	stale, tok, err := e.reclaimed(key, longLease)
	if err != nil {
		return err
	}
	other, err := e.own("", e.key(), msgA, longLease)
	if err != nil {
		return err
	}
	before, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		what string
		tok  idempotency.Token
	}{{"another claim's token", other}, {"a token never issued", tok ^ 0x5a5a5a5a5a5a}, {"the token of the claim released before", stale}} {
		if w.tok == tok || w.tok == 0 {
			continue
		}
		if err := e.refusedExtend("", key, w.tok, "a claim owned by another token ("+w.what+")", msgA, pending, before); err != nil {
			return err
		}
	}
	if err := e.extend("", key, tok, 2*longLease); err != nil {
		return err
	}
	r, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if !r.LeaseExpiresAt.After(before.LeaseExpiresAt) {
		return fmt.Errorf("after the owner extended a lease of %v by %v, the lease ends at %v, not later than %v",
			longLease, 2*longLease, r.LeaseExpiresAt, before.LeaseExpiresAt)
	}
	return nil
}

// checkExtendOnlyPending: only a pending claim is extended: a key bound to a task, a
// reply or both is refused with ErrNotOwner even under its owner's token, and stays
// bound; a key never claimed is refused and not created; with the TTL, so is a
// pending claim past its time to live, which stays absent.
func checkExtendOnlyPending(e *env) error {
	for _, b := range []idempotency.Binding{boundA, repliedA, bothA} {
		key := e.key()
		tok, err := e.ownBound("", key, msgA, b)
		if err != nil {
			return err
		}
		if err := e.refusedExtend("", key, tok, "a key bound to "+describeBinding(b), msgA, b, idempotency.Record{MessageID: msgA}); err != nil {
			return err
		}
		if _, err := e.wantSame("", key, msgA, b); err != nil {
			return err
		}
	}
	if err := e.refusedExtend("", e.key(), 1, "a key never claimed", "", pending, idempotency.Record{}); err != nil {
		return err
	}
	if !e.clock() || e.h.TTL <= 0 {
		return nil
	}
	key := e.key()
	tok, err := e.own("", key, msgA, 2*e.h.TTL)
	if err != nil {
		return err
	}
	e.since(time.Now()).to(e.h.TTL + e.ttlMargin())
	return e.refusedExtend("", key, tok, "a pending claim past its TTL, its lease still running", "", pending, idempotency.Record{})
}

// checkExtendFencedOut: the token of a claim taken over, released, or bound no longer
// extends: after a takeover (through the second handle when the harness offers one)
// the old owner's Extend gets ErrNotOwner and the new owner's lease is unchanged;
// after a release the key stays absent; after a bind it stays bound.
func checkExtendFencedOut(e *env) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	keys, toks, err := e.abandon("", 1)
	if err != nil {
		return err
	}
	key, old := keys[0], toks[0]
	tok, err := e.ownOn(ixs[len(ixs)-1], "", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("takeover: %w", err)
	}
	taken, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if err := e.refusedExtend("", key, old, "a claim taken over since", msgA, pending, taken); err != nil {
		return err
	}
	if err := e.extend("", key, tok, longLease); err != nil {
		return fmt.Errorf("by the new owner: %w", err)
	}

	released, rtok, err := e.released()
	if err != nil {
		return err
	}
	if err := e.refusedExtend("", released, rtok, "a claim released by its owner", "", pending, idempotency.Record{}); err != nil {
		return err
	}

	bound, btok, err := e.claimed()
	if err != nil {
		return err
	}
	if err := e.extend("", bound, btok, longLease); err != nil {
		return err
	}
	if err := e.bind("", bound, btok, boundA); err != nil {
		return fmt.Errorf("after an Extend: %w", err)
	}
	return e.refusedExtend("", bound, btok, "a claim its owner bound since", msgA, boundA, idempotency.Record{MessageID: msgA})
}

// checkExtendAfterLeaseEnd: once a claim's lease has ended, its owner can no longer
// extend it, although nobody took it over: Extend gets ErrNotOwner and changes nothing,
// and a retry then takes the claim over. A late extension never revives a claim.
func checkExtendAfterLeaseEnd(e *env) error {
	keys, toks, err := e.abandon("", 1)
	if err != nil {
		return err
	}
	key, tok := keys[0], toks[0]
	before, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if err := e.refusedExtend("", key, tok, "its owner's claim after its lease ended, nobody having taken it over", msgA, pending, before); err != nil {
		return err
	}
	taken, err := e.own("", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("a retry after the owner's late Extend was refused: %w", err)
	}
	if taken == tok {
		return fmt.Errorf("takeover returned the old token %d; want a new one", tok)
	}
	return nil
}
