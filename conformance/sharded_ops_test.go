package conformance

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

func (x *shardIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shardindex: bind: %w", err)
		}
	}
	if err := validKey(key); err != nil {
		return err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if token == 0 && x.bug != bugZeroTokenAfterLookup {
			return invalid("zero token")
		}
		if err := checkBinding(b); err != nil {
			return err
		}
	}
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.get(h, mk)
	now := x.now()
	if e != nil && !e.released && token == 0 && x.bug == bugZeroTokenAfterLookup {
		return invalid("zero token")
	}
	stale := x.bug == bugStaleTokenAfterLease && e != nil && x.pending(e) && x.leaseEnded(e, now)
	if e == nil || e.released || (x.bug != bugBindIgnoresTTL && x.expired(e, now)) ||
		(e.token != token && x.bug != bugBindIgnoresToken && !stale) {
		return fmt.Errorf("shardindex: bind: %w", idempotency.ErrNotOwner)
	}
	same := (b.TaskID == "" || e.taskID == b.TaskID) && (len(b.Reply) == 0 || bytes.Equal(e.reply, b.Reply))
	switch {
	case x.bug == bugBindOverwrites:
	case x.bug == bugReplyRebindUnchecked && b.TaskID == "" && e.taskID != "" && e.reply != nil:
		return nil // "the task is the same, so is the reply"
	case same && !x.pending(e):
		if x.bug == bugRebindFails {
			return fmt.Errorf("shardindex: bind: %w", idempotency.ErrAlreadyBound)
		}
		return nil
	case x.pending(e):
		if x.bug == bugValidatesOnlyNewKeys {
			if token == 0 {
				return invalid("zero token")
			}
			if err := checkBinding(b); err != nil {
				return err
			}
		}
	case e.taskID != "" && e.reply == nil && b.TaskID == e.taskID && x.bug != bugTaskCannotGainReply:
	default:
		return fmt.Errorf("shardindex: bind: %w", idempotency.ErrAlreadyBound)
	}
	if x.bug == bugBindNonAtomic {
		apart(&sh.mu, 100*time.Microsecond) // the state read and judged, then the write: two round trips
	}
	e.taskID = b.TaskID
	if x.bug == bugTornBind {
		apart(&sh.mu, 50*time.Microsecond) // HSET task, then HSET reply, outside one transaction
	}
	e.reply = x.keepReply(b.Reply)
	return nil
}

// keepReply returns what the index stores of a Binding's Reply.
func (x *shardIndex) keepReply(reply []byte) []byte {
	switch {
	case x.bug == bugAliasesReply:
		return reply
	case len(reply) > 0:
		return bytes.Clone(reply)
	case x.bug == bugStoresEmptyReply && reply != nil:
		return []byte{}
	}
	return nil
}

func (x *shardIndex) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shardindex: release: %w", err)
		}
	}
	if err := validKey(key); err != nil {
		return err
	}
	if token == 0 && x.bug != bugValidatesOnlyNewKeys && x.bug != bugZeroTokenAfterLookup {
		return invalid("zero token")
	}
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := x.live(sh, h, mk, x.now())
	switch {
	case e != nil && token == 0 && x.bug == bugZeroTokenAfterLookup:
		return invalid("zero token")
	case e == nil:
		if x.bug == bugReleaseNotHeldErr {
			return fmt.Errorf("shardindex: release: %w", idempotency.ErrNotOwner)
		}
		return nil
	case e.token != token && x.bug != bugReleaseIgnoresToken:
		return fmt.Errorf("shardindex: release: %w", idempotency.ErrNotOwner)
	case !x.pending(e) && x.bug != bugReleasesBound:
		return nil
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shardindex: release: %w", err)
		}
	}
	switch x.bug {
	case bugReleaseKeepsKey:
		return nil
	case bugReleaseTombstone, bugExtendRevivesReleased:
		e.released = true
		return nil
	case bugReleaseNonAtomic:
		apart(&sh.mu, 100*time.Microsecond) // the token checked, then DEL by key
		e = sh.get(h, mk)
		if e == nil {
			return nil
		}
	}
	sh.del(e)
	x.unreserve(scope)
	return nil
}

func (x *shardIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("shardindex: lookup: %w", err)
	}
	if err := validKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := x.now()
	e := x.live(sh, h, mk, now)
	if e == nil || (x.bug == bugLookupHidesPending && x.pending(e)) {
		return idempotency.Record{}, false, nil
	}
	if x.bug == bugLookupExtendsLease && x.pending(e) {
		e.leaseEnd = now.Add(e.leaseLen)
	}
	return x.record(e), true, nil
}

func (x *shardIndex) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if x.bug != bugExtendCtxAfterWrite {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("shardindex: extend: %w", err)
		}
	}
	if err := validKey(key); err != nil {
		return err
	}
	if err := x.bug.extendArgs(token, lease); err != nil {
		return err
	}
	lease = x.bug.extendLease(lease)
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := x.now()
	e := x.live(sh, h, mk, now)
	switch r := sh.get(h, mk); {
	case r == nil:
	case x.bug == bugExtendIgnoresTTL && !r.released, x.bug == bugExtendRevivesReleased && r.released:
		e = r
	}
	if e != nil && token == 0 {
		return invalid("zero token")
	}
	if e == nil || (e.token != token && x.bug != bugExtendIgnoresToken) || (!x.pending(e) && x.bug != bugExtendsBound) ||
		x.bug.extendLeaseEnded(e.leaseEnd, now) {
		return fmt.Errorf("shardindex: extend: %w", idempotency.ErrNotOwner)
	}
	if x.bug == bugExtendNonAtomic {
		apart(&sh.mu, 200*time.Microsecond) // GET and judge, then HSET by key
		if e = sh.get(h, mk); e == nil {
			return nil
		}
		now = x.now()
	}
	e.released = false
	e.leaseEnd, e.leaseLen = x.bug.extendedLease(now, e.claimedAt, e.leaseEnd, lease), lease
	switch x.bug {
	case bugExtendRefreshesClaim:
		e.claimedAt = now
	case bugExtendCountsAgain:
		x.count(scope).Add(1)
	case bugExtendCtxAfterWrite:
		return ctx.Err()
	}
	return nil
}
