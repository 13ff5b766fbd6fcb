package conformance

import (
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// checkHandlesSeeEachOther: what one handle does, a second handle on the same storage
// sees at once, although it read the key before: a claim, a bind, a reply added to a
// bound task id, a release and the claim by another message after it, a takeover and
// its new lease, a lease extension, and, with the TTL, a key claimed afresh by another
// message once it expired. An index that keeps what it read (a bound record looks
// final) answers a retry served by another process from a state that is gone.
func checkHandlesSeeEachOther(e *env) error {
	b, err := e.openHandle()
	if err != nil {
		return err
	}
	a := e.ix
	// see reads key through b, by Lookup and by a retry of msg, and wants bound.
	see := func(step, key, msg string, bound idempotency.Binding) (idempotency.Record, error) {
		if _, err := e.wantHeldOn(b, "", key, msg, bound); err != nil {
			return idempotency.Record{}, fmt.Errorf("through the second handle, %s through the first: %w", step, err)
		}
		r, err := e.wantSameOn(b, "", key, msg, bound)
		if err != nil {
			return r, fmt.Errorf("through the second handle, %s through the first: %w", step, err)
		}
		return r, nil
	}
	absent := func(step, key string) error {
		r, ok, err := b.Lookup(e.ctx, "", key)
		if err != nil || ok {
			return fmt.Errorf("Lookup(%s) through the second handle, %s through the first = %s, %t, %v; want the key absent",
				where("", key), step, describeRecord(r), ok, err)
		}
		return nil
	}

	key := e.key()
	if err := absent("before any claim", key); err != nil {
		return err
	}
	tok, err := e.ownOn(a, "", key, msgA, longLease)
	if err != nil {
		return err
	}
	for _, step := range []struct {
		name string
		b    idempotency.Binding
	}{{"after a claim", pending}, {"after a Bind to a task", boundA}, {"after the task gained a reply", bothA}} {
		if step.b.TaskID != "" {
			if err := e.bindOn(a, "", key, tok, step.b); err != nil {
				return err
			}
		}
		if _, err := see(step.name, key, msgA, step.b); err != nil {
			return err
		}
	}

	// A release, and another message's claim after it.
	key = e.key()
	if tok, err = e.ownOn(a, "", key, msgA, longLease); err != nil {
		return err
	}
	if _, err := see("after a claim", key, msgA, pending); err != nil {
		return err
	}
	if err := a.Release(e.ctx, "", key, tok); err != nil {
		return fmt.Errorf("Release through the first handle: %w", err)
	}
	if err := absent("after a Release", key); err != nil {
		return err
	}
	if _, err := e.ownOn(a, "", key, msgB, longLease); err != nil {
		return err
	}
	if _, err := see("after another message claimed the released key", key, msgB, pending); err != nil {
		return err
	}

	// A takeover, and an extension: the second handle reports the lease of now.
	key, lease := e.key(), e.lease()
	start := time.Now()
	if _, err := e.ownOn(a, "", key, msgA, lease); err != nil {
		return err
	}
	before, err := see("after a claim", key, msgA, pending)
	if err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
	if tok, err = e.ownOn(a, "", key, msgA, longLease); err != nil {
		return fmt.Errorf("takeover through the first handle: %w", err)
	}
	after, err := see("after a takeover", key, msgA, pending)
	if err != nil {
		return err
	}
	if !after.LeaseExpiresAt.After(before.LeaseExpiresAt) {
		return fmt.Errorf("through the second handle, after a takeover with lease %v through the first, the lease ends at %v, as before it; want the takeover's",
			longLease, after.LeaseExpiresAt)
	}
	if err := a.Extend(e.ctx, "", key, tok, 2*longLease); err != nil {
		return fmt.Errorf("Extend through the first handle: %w", err)
	}
	extended, err := see("after an Extend", key, msgA, pending)
	if err != nil {
		return err
	}
	if !extended.LeaseExpiresAt.After(after.LeaseExpiresAt) {
		return fmt.Errorf("through the second handle, after an Extend by %v through the first, the lease ends at %v, as before it; want the extension's",
			2*longLease, extended.LeaseExpiresAt)
	}

	// A bound key past its TTL, claimed afresh by another message.
	if !e.clock() || e.h.TTL <= 0 {
		return nil
	}
	key = e.key()
	if tok, err = e.ownOn(a, "", key, msgA, longLease); err != nil {
		return err
	}
	if err := e.bindOn(a, "", key, tok, boundA); err != nil {
		return err
	}
	if _, err := see("after a Bind", key, msgA, boundA); err != nil {
		return err
	}
	e.since(time.Now()).to(e.h.TTL + e.ttlMargin())
	if _, err := e.ownOn(a, "", key, msgB, longLease); err != nil {
		return fmt.Errorf("past the TTL of a bound key: %w", err)
	}
	_, err = see("after another message claimed the key past its TTL", key, msgB, pending)
	return err
}
