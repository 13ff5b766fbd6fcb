package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// doneContexts returns a cancelled context and one whose deadline has passed.
func (e *env) doneContexts() map[string]context.Context {
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	expired, cancel := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
	cancel()
	return map[string]context.Context{"a cancelled context": cancelled, "a context past its deadline": expired}
}

// wantCtxErr wants err to wrap ctx.Err(), ctx being done; what names the call.
func wantCtxErr(what string, ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%s = %v; want an error wrapping ctx.Err() (%v), so that callers can tell a gone client "+
			"from a failing store (wrap with %%w, not %%v, and check ctx before answering from any state)", what, err, ctx.Err())
	}
	return nil
}

// checkCancelledClaim: a Claim whose context is already done returns an error
// wrapping ctx.Err() and consumes nothing, whatever the key's state: a free key stays
// absent and another message can claim it; a pending or bound key is unchanged.
func checkCancelledClaim(e *env) error {
	for name, ctx := range e.doneContexts() {
		key := e.key()
		c, err := e.ix.Claim(ctx, "", key, msgA, longLease)
		if err := wantCtxErr(fmt.Sprintf("Claim of a free key with %s (result %s)", name, describe(c)), ctx, err); err != nil {
			return err
		}
		if err := e.wantAbsent("", key); err != nil {
			return fmt.Errorf("after a Claim with %s: %w", name, err)
		}
		if _, err := e.own("", key, msgB, longLease); err != nil {
			return fmt.Errorf("after a Claim with %s: %w", name, err)
		}
		for _, msg := range []string{msgA, msgB} {
			c, err := e.ix.Claim(ctx, "", key, msg, longLease)
			if err := wantCtxErr(fmt.Sprintf("Claim of a pending key by %q with %s (result %s)", msg, name, describe(c)), ctx, err); err != nil {
				return err
			}
		}
		bound := e.key()
		if _, err := e.ownBound("", bound, msgA, boundA); err != nil {
			return err
		}
		c, err = e.ix.Claim(ctx, "", bound, msgA, longLease)
		if err := wantCtxErr(fmt.Sprintf("Claim of a bound key by its message with %s (result %s)", name, describe(c)), ctx, err); err != nil {
			return err
		}
	}
	return nil
}

// checkCancelledTakeover: a Claim with a done context takes nothing over: the claim
// whose lease ended stays with its owner, who can still bind it.
func checkCancelledTakeover(e *env) error {
	keys, toks, err := e.abandon("", 1)
	if err != nil {
		return err
	}
	key, tok := keys[0], toks[0]
	for name, ctx := range e.doneContexts() {
		c, err := e.ix.Claim(ctx, "", key, msgA, longLease)
		if err := wantCtxErr(fmt.Sprintf("Claim of an abandoned claim (a takeover) with %s (result %s)", name, describe(c)), ctx, err); err != nil {
			return err
		}
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return fmt.Errorf("by the owner, after takeovers with a done context: %w", err)
	}
	_, err = e.wantSame("", key, msgA, boundA)
	return err
}

// checkCancelledBind: a Bind whose context is done returns an error wrapping
// ctx.Err() and binds nothing, whether the key is pending or already bound to the same
// value; the owner can bind afterwards.
func checkCancelledBind(e *env) error {
	for name, ctx := range e.doneContexts() {
		key, tok, err := e.claimed()
		if err != nil {
			return err
		}
		err = e.ix.Bind(ctx, "", key, tok, boundA)
		if err := wantCtxErr("Bind of a pending key with "+name, ctx, err); err != nil {
			return err
		}
		if _, err := e.wantHeld("", key, msgA, pending); err != nil {
			return fmt.Errorf("after a Bind with %s: %w", name, err)
		}
		if err := e.bind("", key, tok, boundB); err != nil {
			return fmt.Errorf("after a Bind with %s: %w", name, err)
		}
		err = e.ix.Bind(ctx, "", key, tok, boundB)
		if err := wantCtxErr("Bind of a key bound to the same task with "+name, ctx, err); err != nil {
			return err
		}
	}
	return nil
}

// checkCancelledRelease: a Release whose context is done returns an error wrapping
// ctx.Err() and frees nothing, whether the key is pending, bound or not held; the
// owner still holds the claim.
func checkCancelledRelease(e *env) error {
	for name, ctx := range e.doneContexts() {
		key, tok, err := e.claimed()
		if err != nil {
			return err
		}
		err = e.ix.Release(ctx, "", key, tok)
		if err := wantCtxErr("Release of a pending key with "+name, ctx, err); err != nil {
			return err
		}
		if err := e.wantOther("", key, msgB); err != nil {
			return fmt.Errorf("after a Release with %s: %w", name, err)
		}
		if err := e.bind("", key, tok, boundA); err != nil {
			return fmt.Errorf("after a Release with %s: %w", name, err)
		}
		err = e.ix.Release(ctx, "", key, tok)
		if err := wantCtxErr("Release of a bound key with "+name, ctx, err); err != nil {
			return err
		}
		err = e.ix.Release(ctx, "", e.key(), tok)
		if err := wantCtxErr("Release of a key not held with "+name, ctx, err); err != nil {
			return err
		}
	}
	return nil
}

// checkCancelledLookup: a Lookup whose context is done returns an error wrapping
// ctx.Err(), whether the key is held or absent.
func checkCancelledLookup(e *env) error {
	key := e.key()
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return err
	}
	for name, ctx := range e.doneContexts() {
		for _, k := range []string{key, e.key()} {
			r, ok, err := e.ix.Lookup(ctx, "", k)
			if err := wantCtxErr(fmt.Sprintf("Lookup with %s (result %s, %t)", name, describeRecord(r), ok), ctx, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCancelledExtend: an Extend whose context is done returns an error wrapping
// ctx.Err() and extends nothing, whether the key is pending, bound or not held; the
// owner extends afterwards.
func checkCancelledExtend(e *env) error {
	for name, ctx := range e.doneContexts() {
		key, tok, before, err := e.claimedRecord()
		if err != nil {
			return err
		}
		err = e.ix.Extend(ctx, "", key, tok, 3*longLease)
		if err := wantCtxErr("Extend of a pending key with "+name, ctx, err); err != nil {
			return err
		}
		if err := e.wantLeaseKept("", key, msgA, before, "an Extend with "+name); err != nil {
			return err
		}
		if err := e.extend("", key, tok, longLease); err != nil {
			return fmt.Errorf("after an Extend with %s: %w", name, err)
		}
		if err := e.bind("", key, tok, boundA); err != nil {
			return err
		}
		err = e.ix.Extend(ctx, "", key, tok, longLease)
		if err := wantCtxErr("Extend of a bound key with "+name, ctx, err); err != nil {
			return err
		}
		err = e.ix.Extend(ctx, "", e.key(), tok, longLease)
		if err := wantCtxErr("Extend of a key not held with "+name, ctx, err); err != nil {
			return err
		}
	}
	return nil
}
