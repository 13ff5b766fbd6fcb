package conformance

import (
	"fmt"

	"github.com/a2akit/idempotency"
)

// checkReleaseFreesPending: Release by the owner frees a pending claim: the key is
// absent, and another message can claim it, with a different token.
func checkReleaseFreesPending(e *env) error {
	key, tok, err := e.released()
	if err != nil {
		return err
	}
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	tok2, err := e.own("", key, msgB, longLease)
	if err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	if tok2 == tok {
		return fmt.Errorf("a claim after Release got the released token %d; want a new one", tok)
	}
	return nil
}

// refusesWrongTokens claims a fresh key as msgA, and wants op (the call called name)
// under a token that does not own the claim, a real token of another claim and one
// never issued, to return ErrNotOwner and leave the claim pending. The owner then
// binds the key to boundA. It returns the key, the owner's token and the other
// claim's token.
func (e *env) refusesWrongTokens(name string, op func(key string, wrong idempotency.Token) error) (key string, tok, other idempotency.Token, err error) {
	key = e.key()
	if tok, err = e.own("", key, msgA, longLease); err != nil {
		return "", 0, 0, err
	}
	if other, err = e.own("", e.key(), msgA, longLease); err != nil {
		return "", 0, 0, err
	}
	for _, wrong := range []idempotency.Token{other, tok ^ 0x5a5a5a5a5a5a} {
		if wrong == tok || wrong == 0 {
			continue
		}
		err := op(key, wrong)
		if err := wantErr(fmt.Sprintf("%s(%s, token %d) of a claim owned by token %d", name, where("", key), wrong, tok),
			err, idempotency.ErrNotOwner); err != nil {
			return "", 0, 0, err
		}
		if _, err := e.wantHeld("", key, msgA, pending); err != nil {
			return "", 0, 0, fmt.Errorf("after %s with a wrong token: %w", name, err)
		}
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return "", 0, 0, fmt.Errorf("after %s with a wrong token: %w", name, err)
	}
	return key, tok, other, nil
}

// checkReleaseWrongToken: Release under a token that does not own the claim (a real
// token of another claim, or one never issued) returns ErrNotOwner and changes nothing,
// whether the key is pending or bound.
func checkReleaseWrongToken(e *env) error {
	key, tok, other, err := e.refusesWrongTokens("Release", func(key string, wrong idempotency.Token) error {
		return e.ix.Release(e.ctx, "", key, wrong)
	})
	if err != nil {
		return err
	}
	// Bound, the key still refuses a token that does not own it: the token is
	// checked first.
	err = e.ix.Release(e.ctx, "", key, other)
	if err := wantErr(fmt.Sprintf("Release(%s, token %d) of a key bound under token %d", where("", key), other, tok),
		err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
}

// checkReleaseBoundIsNoop: Release of a bound key (to a task, or to a reply alone) by
// its owner returns nil and changes nothing: the key stays bound, replays still see
// the binding, another message is still refused.
func checkReleaseBoundIsNoop(e *env) error {
	for _, b := range []idempotency.Binding{boundA, repliedA} {
		key := e.key()
		tok, err := e.ownBound("", key, msgA, b)
		if err != nil {
			return err
		}
		if err := e.release("", key, tok); err != nil {
			return fmt.Errorf("of a key bound to %s: %w", describeBinding(b), err)
		}
		if _, err := e.wantHeld("", key, msgA, b); err != nil {
			return fmt.Errorf("after Release of a key bound to %s: %w", describeBinding(b), err)
		}
		if _, err := e.wantSame("", key, msgA, b); err != nil {
			return fmt.Errorf("after Release of a key bound to %s: %w", describeBinding(b), err)
		}
		if err := e.wantOther("", key, msgB); err != nil {
			return err
		}
	}
	return nil
}

// checkReleaseNotHeld: releasing a key never claimed, or already released, returns
// nil and leaves it absent.
func checkReleaseNotHeld(e *env) error {
	never := e.key()
	if err := e.ix.Release(e.ctx, "", never, 1); err != nil {
		return fmt.Errorf("Release(%s) of a key never claimed = %w; want nil", where("", never), err)
	}
	if err := e.wantAbsent("", never); err != nil {
		return err
	}
	key, tok, err := e.claimed()
	if err != nil {
		return err
	}
	for i := range 2 {
		if err := e.ix.Release(e.ctx, "", key, tok); err != nil {
			return fmt.Errorf("Release #%d of a claim (%s) = %w; want nil", i+1, where("", key), err)
		}
	}
	return e.wantAbsent("", key)
}

// checkReleasedTokenRefused: after a release and a new claim by the same message, the
// old token no longer owns the key: Bind and Release with it return ErrNotOwner and
// change nothing.
func checkReleasedTokenRefused(e *env) error {
	key, old, err := e.released()
	if err != nil {
		return err
	}
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	if tok == old {
		return fmt.Errorf("a claim after Release got the released token %d; want a new one", tok)
	}
	if err := e.wantFenced(key, old, "the released token"); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return fmt.Errorf("after Bind and Release with the released token: %w", err)
	}
	return e.bind("", key, tok, boundA)
}

// checkTokensUnique: tokens are unique across keys and across claims of one key.
func checkTokensUnique(e *env) error {
	seen := make(map[idempotency.Token]string)
	note := func(tok idempotency.Token, what string) error {
		if prev, dup := seen[tok]; dup {
			return fmt.Errorf("token %d issued twice: for %s and for %s", tok, prev, what)
		}
		seen[tok] = what
		return nil
	}
	for i := range 20 {
		key := e.key()
		for round := range 3 {
			tok, err := e.own("", key, msgA, longLease)
			if err != nil {
				return err
			}
			if err := note(tok, fmt.Sprintf("claim %d of key %d", round+1, i)); err != nil {
				return err
			}
			if err := e.release("", key, tok); err != nil {
				return err
			}
		}
	}
	return nil
}
