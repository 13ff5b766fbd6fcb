package conformance

import (
	"context"
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

// checkScopeKeyNoCollision: scopes and keys are kept apart, not joined into one
// string: scope "t" with key "k:K" and scope "t:k" with key "K" are two claims, and so
// are scope "tk" with key "K" and scope "t" with key "kK".
func checkScopeKeyNoCollision(e *env) error {
	k := e.key()
	pairs := [][2]string{{"t", "k:" + k}, {"t:k", k}, {"tk", k}, {"t", "k" + k}}
	for i, p := range pairs {
		if _, err := e.own(p[0], p[1], fmt.Sprintf("conformance-message-%d", i), longLease); err != nil {
			return err
		}
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

// checkCancelledClaim: a Claim whose context is already done returns an error and
// consumes nothing: the key stays absent, and another message can claim it.
func checkCancelledClaim(e *env) error {
	for name, ctx := range e.doneContexts() {
		key := e.key()
		c, err := e.ix.Claim(ctx, "", key, msgA, longLease)
		if err == nil {
			return fmt.Errorf("Claim with %s = %s, nil; want an error, and nothing claimed", name, describe(c))
		}
		if err := e.wantAbsent("", key); err != nil {
			return fmt.Errorf("after a Claim with %s: %w", name, err)
		}
		if _, err := e.own("", key, msgB, longLease); err != nil {
			return fmt.Errorf("after a Claim with %s: %w", name, err)
		}
	}
	return nil
}

// checkCancelledBind: a Bind whose context is done returns an error and binds
// nothing; the owner can bind afterwards.
func checkCancelledBind(e *env) error {
	for name, ctx := range e.doneContexts() {
		key := e.key()
		tok, err := e.own("", key, msgA, longLease)
		if err != nil {
			return err
		}
		if err := e.ix.Bind(ctx, "", key, tok, boundA); err == nil {
			return fmt.Errorf("Bind with %s = nil; want an error, and nothing bound", name)
		}
		if _, err := e.wantHeld("", key, msgA, pending); err != nil {
			return fmt.Errorf("after a Bind with %s: %w", name, err)
		}
		if err := e.bind("", key, tok, boundB); err != nil {
			return fmt.Errorf("after a Bind with %s: %w", name, err)
		}
	}
	return nil
}

// checkCancelledRelease: a Release whose context is done returns an error and frees
// nothing; the owner still holds the claim.
func checkCancelledRelease(e *env) error {
	for name, ctx := range e.doneContexts() {
		key := e.key()
		tok, err := e.own("", key, msgA, longLease)
		if err != nil {
			return err
		}
		if err := e.ix.Release(ctx, "", key, tok); err == nil {
			return fmt.Errorf("Release with %s = nil; want an error, and nothing released", name)
		}
		if err := e.wantOther("", key, msgB); err != nil {
			return fmt.Errorf("after a Release with %s: %w", name, err)
		}
		if err := e.bind("", key, tok, boundA); err != nil {
			return fmt.Errorf("after a Release with %s: %w", name, err)
		}
	}
	return nil
}

// checkCancelledLookup: a Lookup whose context is done returns an error.
func checkCancelledLookup(e *env) error {
	key := e.key()
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return err
	}
	for name, ctx := range e.doneContexts() {
		if r, ok, err := e.ix.Lookup(ctx, "", key); err == nil {
			return fmt.Errorf("Lookup with %s = %s, %t, nil; want an error", name, describeRecord(r), ok)
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
