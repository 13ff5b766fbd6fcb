package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// own claims a free key and returns the token, or an error when the Claim did not
// return Claimed with a non-zero token.
func (e *env) own(scope, key, msg string, lease time.Duration) (idempotency.Token, error) {
	return e.ownOn(e.ix, scope, key, msg, lease)
}

// claimed claims a fresh key in the empty scope for msgA with a long lease: the
// pending claim most checks start from. It returns the key and the claim's token.
func (e *env) claimed() (string, idempotency.Token, error) {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	return key, tok, err
}

// claimedRecord is claimed, and also returns the claim's Record as Lookup reports
// it, checked to be pending for msgA.
func (e *env) claimedRecord() (string, idempotency.Token, idempotency.Record, error) {
	key, tok, err := e.claimed()
	if err != nil {
		return key, tok, idempotency.Record{}, err
	}
	r, err := e.wantHeld("", key, msgA, pending)
	return key, tok, r, err
}

// released is claimed, then released by its owner: a key that was held and is no
// longer. It returns the key and the released claim's token.
func (e *env) released() (string, idempotency.Token, error) {
	key, tok, err := e.claimed()
	if err == nil {
		err = e.release("", key, tok)
	}
	return key, tok, err
}

func (e *env) ownOn(ix idempotency.KeyIndex, scope, key, msg string, lease time.Duration) (idempotency.Token, error) {
	c, err := ix.Claim(e.ctx, scope, key, msg, lease)
	if err != nil {
		return 0, fmt.Errorf("Claim(%s, %q): %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.Claimed || c.Token == 0 {
		return 0, fmt.Errorf("Claim(%s, %q) = %s; want claimed with a non-zero token", where(scope, key), msg, describe(c))
	}
	return c.Token, nil
}

// ownBound claims a free key and binds it to b.
func (e *env) ownBound(scope, key, msg string, b idempotency.Binding) (idempotency.Token, error) {
	tok, err := e.own(scope, key, msg, longLease)
	if err != nil {
		return 0, err
	}
	return tok, e.bind(scope, key, tok, b)
}

// bind binds (scope, key) to b under tok and wants success.
func (e *env) bind(scope, key string, tok idempotency.Token, b idempotency.Binding) error {
	return e.bindOn(e.ix, scope, key, tok, b)
}

func (e *env) bindOn(ix idempotency.KeyIndex, scope, key string, tok idempotency.Token, b idempotency.Binding) error {
	if err := ix.Bind(e.ctx, scope, key, tok, b); err != nil {
		return fmt.Errorf("Bind(%s, owner's token, %s): %w", where(scope, key), describeBinding(b), err)
	}
	return nil
}

// release releases (scope, key) under tok and wants nil.
func (e *env) release(scope, key string, tok idempotency.Token) error {
	if err := e.ix.Release(e.ctx, scope, key, tok); err != nil {
		return fmt.Errorf("Release(%s, owner's token): %w", where(scope, key), err)
	}
	return nil
}

// wantFenced wants Bind and Release of key (in the empty scope) under tok, a token
// that no longer owns it, to return ErrNotOwner; with names the token in failure
// messages.
func (e *env) wantFenced(key string, tok idempotency.Token, with string) error {
	err := e.ix.Bind(e.ctx, "", key, tok, boundB)
	if err := wantErr("Bind with "+with, err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	err = e.ix.Release(e.ctx, "", key, tok)
	return wantErr("Release with "+with, err, idempotency.ErrNotOwner)
}

// wantSame claims (scope, key) as msg and wants [idempotency.HeldBySameMessage] with
// a Record that names msg and carries b (pending when b is zero).
func (e *env) wantSame(scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	return e.wantSameOn(e.ix, scope, key, msg, b)
}

func (e *env) wantSameOn(ix idempotency.KeyIndex, scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	c, err := ix.Claim(e.ctx, scope, key, msg, longLease)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("Claim(%s, %q) by the holding message: %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.HeldBySameMessage || c.Token != 0 ||
		c.Record.MessageID != msg || !carries(c.Record, b) {
		return c.Record, fmt.Errorf("Claim(%s, %q) by the holding message = %s; want held by same message %q, %s, with no token",
			where(scope, key), msg, describe(c), msg, describeBinding(b))
	}
	return c.Record, nil
}

// wantOther claims (scope, key) as msg and wants [idempotency.HeldByOtherMessage] with
// an empty Record and no token.
func (e *env) wantOther(scope, key, msg string) error {
	c, err := e.ix.Claim(e.ctx, scope, key, msg, longLease)
	if err != nil {
		return fmt.Errorf("Claim(%s, %q) by another message: %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.HeldByOtherMessage || c.Token != 0 || !emptyRecord(c.Record) {
		return fmt.Errorf("Claim(%s, %q) by another message = %s; want held by other message, with an empty Record and no token",
			where(scope, key), msg, describe(c))
	}
	return nil
}

// wantHeld looks (scope, key) up and wants a Record that names msg and carries b.
func (e *env) wantHeld(scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	return e.wantHeldOn(e.ix, scope, key, msg, b)
}

func (e *env) wantHeldOn(ix idempotency.KeyIndex, scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	r, ok, err := ix.Lookup(e.ctx, scope, key)
	if err != nil {
		return r, fmt.Errorf("Lookup(%s): %w", where(scope, key), err)
	}
	if !ok || r.MessageID != msg || !carries(r, b) {
		return r, fmt.Errorf("Lookup(%s) = %s, %t; want the Record of message %q, %s",
			where(scope, key), describeRecord(r), ok, msg, describeBinding(b))
	}
	return r, nil
}

// wantAbsent looks (scope, key) up and wants it absent.
func (e *env) wantAbsent(scope, key string) error {
	r, ok, err := e.ix.Lookup(e.ctx, scope, key)
	if err != nil {
		return fmt.Errorf("Lookup(%s): %w", where(scope, key), err)
	}
	if ok {
		return fmt.Errorf("Lookup(%s) = %s, true; want the key absent", where(scope, key), describeRecord(r))
	}
	return nil
}

// wantErr checks that err wraps one of targets; what names the call.
func wantErr(what string, err error, targets ...error) error {
	for _, target := range targets {
		if errors.Is(err, target) {
			return nil
		}
	}
	var names []string
	for _, target := range targets {
		names = append(names, sentinelName(target))
	}
	return fmt.Errorf("%s = %v; want an error wrapping %s", what, err, strings.Join(names, " or "))
}

// sentinelName names a sentinel error for failure messages.
func sentinelName(target error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{idempotency.ErrNotOwner, "idempotency.ErrNotOwner"},
		{idempotency.ErrAlreadyBound, "idempotency.ErrAlreadyBound"},
		{idempotency.ErrFull, "idempotency.ErrFull"},
		{idempotency.ErrInvalidArgument, "idempotency.ErrInvalidArgument"},
		{context.Canceled, "context.Canceled"},
	} {
		if errors.Is(target, s.err) {
			return s.name
		}
	}
	return fmt.Sprintf("%q", target)
}

// carries reports whether r holds b: the same task id and reply, or pending when b is
// zero. A pending Record's Reply must be nil, as [idempotency.Record.Pending] says.
func carries(r idempotency.Record, b idempotency.Binding) bool {
	return r.TaskID == b.TaskID && (r.Reply == nil) == (b.Reply == nil) && bytes.Equal(r.Reply, b.Reply)
}

// emptyRecord reports whether r discloses nothing.
func emptyRecord(r idempotency.Record) bool {
	return r.MessageID == "" && r.TaskID == "" && r.Reply == nil &&
		r.ClaimedAt.IsZero() && r.LeaseExpiresAt.IsZero()
}

func where(scope, key string) string { return fmt.Sprintf("scope %q, key %q", scope, key) }

func describe(c idempotency.Claim) string {
	s := c.Status.String()
	if c.Token != 0 {
		s += fmt.Sprintf(", token %d", c.Token)
	}
	if c.Status != idempotency.Claimed || !emptyRecord(c.Record) {
		s += ", Record " + describeRecord(c.Record)
	}
	return s
}

func describeRecord(r idempotency.Record) string {
	if emptyRecord(r) {
		return "{}"
	}
	b := "pending"
	switch {
	case r.TaskID != "" && r.Reply != nil:
		b = fmt.Sprintf("task %q and reply %q", r.TaskID, r.Reply)
	case r.TaskID != "":
		b = fmt.Sprintf("task %q", r.TaskID)
	case r.Reply != nil:
		b = fmt.Sprintf("reply %q", r.Reply)
	}
	return fmt.Sprintf("{message %q, %s, claimed at %s, lease until %s}", r.MessageID, b,
		r.ClaimedAt.Format(time.RFC3339Nano), r.LeaseExpiresAt.Format(time.RFC3339Nano))
}

func describeBinding(b idempotency.Binding) string {
	switch {
	case b.TaskID != "" && b.Reply != nil:
		return fmt.Sprintf("task %q and reply %q", b.TaskID, b.Reply)
	case b.TaskID != "":
		return fmt.Sprintf("task %q", b.TaskID)
	case b.Reply != nil:
		return fmt.Sprintf("reply %q", b.Reply)
	}
	return "pending"
}
