package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// checkScopeIsolation: the same key in different scopes (the empty scope among them)
// is that many claims with independent state: each is Claimed by its own message,
// binding or releasing one leaves the others as they were, and a token of one does not
// own another.
func checkScopeIsolation(e *env) error {
	scopes := []string{"", "tenant-a", "tenant b/é"}
	msg := func(i int) string { return fmt.Sprintf("conformance-message-scope-%d", i) }
	key := e.key()
	toks := make([]idempotency.Token, len(scopes))
	for i, s := range scopes {
		tok, err := e.own(s, key, msg(i), longLease)
		if err != nil {
			return fmt.Errorf("the same key in a %s scope: %w", ordinal(i), err)
		}
		toks[i] = tok
	}
	if err := e.bind(scopes[0], key, toks[0], boundA); err != nil {
		return err
	}
	err := e.ix.Bind(e.ctx, scopes[2], key, toks[1], boundB)
	if err := wantErr("Bind in one scope with the token of the same key in another", err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	if err := e.release(scopes[1], key, toks[1]); err != nil {
		return err
	}
	if _, err := e.wantHeld(scopes[0], key, msg(0), boundA); err != nil {
		return err
	}
	if err := e.wantAbsent(scopes[1], key); err != nil {
		return err
	}
	if _, err := e.wantHeld(scopes[2], key, msg(2), pending); err != nil {
		return err
	}
	if _, err := e.own(scopes[1], key, msg(0), longLease); err != nil {
		return fmt.Errorf("the message holding the key in another scope: %w", err)
	}
	return nil
}

// checkKeySurvivesTaskDeletion: deleting a task does not delete the key bound to it: a
// retry still gets the task id (and the server will answer that the task is gone, not
// run the agent again), and another message is still refused. Without a task store in
// the harness, BoundKeyNeverTakenOver and TTLExpiresKey still show that the index does
// not forget a bound key on its own within its TTL.
func checkKeySurvivesTaskDeletion(e *env) error {
	taskID, err := e.h.CreateTask(e.ctx)
	if err != nil {
		return fmt.Errorf("Harness.CreateTask: %w", err)
	}
	bound := idempotency.Binding{TaskID: taskID}
	key := e.key()
	if _, err := e.ownBound("", key, msgA, bound); err != nil {
		return err
	}
	if err := e.h.DeleteTask(e.ctx, taskID); err != nil {
		return fmt.Errorf("Harness.DeleteTask(%q): %w", taskID, err)
	}
	if _, err := e.wantHeld("", key, msgA, bound); err != nil {
		return fmt.Errorf("after its task was deleted: %w", err)
	}
	if _, err := e.wantSame("", key, msgA, bound); err != nil {
		return fmt.Errorf("after its task was deleted: %w", err)
	}
	return e.wantOther("", key, msgB)
}

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
		key := e.key()
		tok, err := e.own("", key, msgA, longLease)
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
		key := e.key()
		tok, err := e.own("", key, msgA, longLease)
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

// badKeys are keys that fail [idempotency.ValidateKey], by name.
var badKeys = []struct{ name, key string }{
	{"empty", ""},
	{"15 bytes", strings.Repeat("a", idempotency.MinKeyLength-1)},
	{"256 bytes", strings.Repeat("a", idempotency.MaxKeyLength+1)},
	{"with '/'", "0123456789/abcdef"},
	{"with a space", "0123456789 abcdef"},
	{"with a newline", "0123456789abcdef\n"},
	{"with a NUL", "0123456789\x00abcdef"},
	{"with 'é'", "0123456789abcdefé"},
}

// checkInvalidKey: every method refuses a malformed key with ErrInvalidArgument.
func checkInvalidKey(e *env) error {
	for _, k := range badKeys {
		c, err := e.ix.Claim(e.ctx, "", k.key, msgA, longLease)
		if err := wantErr(fmt.Sprintf("Claim of a malformed key (%s; result %s)", k.name, describe(c)), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		_, _, err = e.ix.Lookup(e.ctx, "", k.key)
		if err := wantErr(fmt.Sprintf("Lookup of a malformed key (%s)", k.name), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		err = e.ix.Bind(e.ctx, "", k.key, 1, boundA)
		if err := wantErr(fmt.Sprintf("Bind of a malformed key (%s)", k.name), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		err = e.ix.Release(e.ctx, "", k.key, 1)
		if err := wantErr(fmt.Sprintf("Release of a malformed key (%s)", k.name), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
	}
	return nil
}

// checkInvalidMessageID: Claim refuses an empty message id with ErrInvalidArgument and
// stores nothing.
func checkInvalidMessageID(e *env) error {
	key := e.key()
	c, err := e.ix.Claim(e.ctx, "", key, "", longLease)
	if err := wantErr(fmt.Sprintf("Claim with an empty message id (result %s)", describe(c)), err, idempotency.ErrInvalidArgument); err != nil {
		return err
	}
	if err := e.wantAbsent("", key); err != nil {
		return err
	}
	_, err = e.own("", key, msgA, longLease)
	return err
}

// checkInvalidLease: Claim refuses a zero or negative lease with ErrInvalidArgument and
// stores nothing.
func checkInvalidLease(e *env) error {
	for _, lease := range []time.Duration{0, -time.Second} {
		key := e.key()
		c, err := e.ix.Claim(e.ctx, "", key, msgA, lease)
		if err := wantErr(fmt.Sprintf("Claim with lease %v (result %s)", lease, describe(c)), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		if err := e.wantAbsent("", key); err != nil {
			return err
		}
	}
	return nil
}

// checkInvalidToken: Bind and Release refuse the zero token with ErrInvalidArgument and
// change nothing.
func checkInvalidToken(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	err = e.ix.Bind(e.ctx, "", key, 0, boundA)
	if err := wantErr("Bind with the zero token", err, idempotency.ErrInvalidArgument); err != nil {
		return err
	}
	err = e.ix.Release(e.ctx, "", key, 0)
	if err := wantErr("Release with the zero token", err, idempotency.ErrInvalidArgument); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return err
	}
	return e.bind("", key, tok, boundA)
}

// checkInvalidBinding: Bind refuses a Binding with neither a task id nor a reply with
// ErrInvalidArgument and binds nothing.
func checkInvalidBinding(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	for _, b := range []idempotency.Binding{{}, {Reply: []byte{}}} { // an empty Reply counts as none
		err := e.ix.Bind(e.ctx, "", key, tok, b)
		if err := wantErr("Bind of a Binding with neither task id nor (non-empty) reply", err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		if _, err := e.wantHeld("", key, msgA, pending); err != nil {
			return err
		}
	}
	return e.bind("", key, tok, boundA)
}

func ordinal(i int) string {
	return [...]string{"first", "second", "third"}[i]
}

// checkInvalidOnHeldKey: bad input is refused with ErrInvalidArgument on a key that is
// already held too (pending or bound), before the key's state is looked at, and
// changes nothing.
func checkInvalidOnHeldKey(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	bound := e.key()
	btok, err := e.ownBound("", bound, msgA, boundA)
	if err != nil {
		return err
	}
	for _, h := range []struct {
		state, key string
		tok        idempotency.Token
		b          idempotency.Binding
	}{{"pending", key, tok, pending}, {"bound", bound, btok, boundA}} {
		for _, c := range []struct {
			what  string
			msg   string
			lease time.Duration
		}{{"an empty message id", "", longLease}, {"lease 0, by the holding message", msgA, 0}, {"a negative lease, by another message", msgB, -time.Second}} {
			got, err := e.ix.Claim(e.ctx, "", h.key, c.msg, c.lease)
			if err := wantErr(fmt.Sprintf("Claim of a %s key with %s (result %s)", h.state, c.what, describe(got)), err, idempotency.ErrInvalidArgument); err != nil {
				return err
			}
		}
		for _, b := range []idempotency.Binding{{}, {Reply: []byte{}}} {
			err := e.ix.Bind(e.ctx, "", h.key, h.tok, b)
			if err := wantErr(fmt.Sprintf("Bind of a %s key by its owner with an empty Binding", h.state), err, idempotency.ErrInvalidArgument); err != nil {
				return err
			}
		}
		err := e.ix.Bind(e.ctx, "", h.key, 0, boundA)
		if err := wantErr(fmt.Sprintf("Bind of a %s key with the zero token", h.state), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		err = e.ix.Release(e.ctx, "", h.key, 0)
		if err := wantErr(fmt.Sprintf("Release of a %s key with the zero token", h.state), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		if _, err := e.wantHeld("", h.key, msgA, h.b); err != nil {
			return fmt.Errorf("after bad input on the %s key: %w", h.state, err)
		}
	}
	return e.bind("", key, tok, boundA)
}
