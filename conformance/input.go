package conformance

import (
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
		err = e.ix.Extend(e.ctx, "", k.key, 1, longLease)
		if err := wantErr(fmt.Sprintf("Extend of a malformed key (%s)", k.name), err, idempotency.ErrInvalidArgument); err != nil {
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
// stores nothing; Extend refuses one too, and the owner's lease is unchanged.
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
		tok, err := e.own("", key, msgA, longLease)
		if err != nil {
			return err
		}
		before, err := e.wantHeld("", key, msgA, pending)
		if err != nil {
			return err
		}
		err = e.ix.Extend(e.ctx, "", key, tok, lease)
		if err := wantErr(fmt.Sprintf("Extend by the owner with lease %v", lease), err, idempotency.ErrInvalidArgument); err != nil {
			return err
		}
		if err := e.wantLeaseKept("", key, msgA, before, fmt.Sprintf("Extend with lease %v", lease)); err != nil {
			return err
		}
	}
	return nil
}

// checkInvalidToken: Bind, Release and Extend refuse the zero token with
// ErrInvalidArgument and change nothing, whatever the key's state: pending, never
// claimed, released. The token is judged before the key is looked up, so that "not
// held" gets one answer (Bind and Extend would say ErrNotOwner, Release nil).
func checkInvalidToken(e *env) error {
	key, tok, err := e.claimed()
	if err != nil {
		return err
	}
	released, _, err := e.released()
	if err != nil {
		return err
	}
	for _, k := range []struct{ state, key string }{{"pending", key}, {"never claimed", e.key()}, {"released", released}} {
		for _, op := range []struct {
			name string
			call func() error
		}{
			{"Bind", func() error { return e.ix.Bind(e.ctx, "", k.key, 0, boundA) }},
			{"Release", func() error { return e.ix.Release(e.ctx, "", k.key, 0) }},
			{"Extend", func() error { return e.ix.Extend(e.ctx, "", k.key, 0, longLease) }},
		} {
			what := fmt.Sprintf("%s of a %s key with the zero token", op.name, k.state)
			if err := wantErr(what, op.call(), idempotency.ErrInvalidArgument); err != nil {
				return err
			}
		}
		if k.key != key {
			if err := e.wantAbsent("", k.key); err != nil {
				return err
			}
		}
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return err
	}
	return e.bind("", key, tok, boundA)
}

// checkInvalidBinding: Bind refuses a Binding with neither a task id nor a reply with
// ErrInvalidArgument and binds nothing.
func checkInvalidBinding(e *env) error {
	key, tok, err := e.claimed()
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
	key, tok, err := e.claimed()
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
		for _, x := range []struct {
			tok   idempotency.Token
			lease time.Duration
		}{{0, longLease}, {h.tok, 0}, {h.tok, -time.Second}} {
			err = e.ix.Extend(e.ctx, "", h.key, x.tok, x.lease)
			what := fmt.Sprintf("Extend of a %s key with token %d and lease %v", h.state, x.tok, x.lease)
			if err := wantErr(what, err, idempotency.ErrInvalidArgument); err != nil {
				return err
			}
		}
		if _, err := e.wantHeld("", h.key, msgA, h.b); err != nil {
			return fmt.Errorf("after bad input on the %s key: %w", h.state, err)
		}
	}
	return e.bind("", key, tok, boundA)
}
