package conformance

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

func checkBinding(b idempotency.Binding) error {
	if b.TaskID == "" && len(b.Reply) == 0 {
		return invalid("a Binding needs a TaskID or a non-empty Reply")
	}
	return nil
}

func (x *refIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if err := bindArgs(max(token, x.bug.zeroTokenLater()), b); err != nil {
			return err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e, ok := x.keys[refKey{scope, key}]
	if x.bug == bugZeroTokenAfterLookup && ok && !e.released && token == 0 {
		return invalid("zero token")
	}
	stale := x.bug == bugStaleTokenAfterLease && ok && e.pending() && x.leaseEnded(e, now) // "OR lease_expires_at <= now"
	if !ok || e.released || (x.bug != bugBindIgnoresTTL && x.expired(e, now)) || (e.token != token && !stale) {
		return fmt.Errorf("refindex: bind: %w", idempotency.ErrNotOwner)
	}
	if x.bug == bugValidatesOnlyNewKeys && e.pending() {
		if err := bindArgs(token, b); err != nil {
			return err
		}
	}
	write, err := x.judgeBind(e, b)
	if err != nil || !write {
		return err
	}
	if x.bug == bugBindNonAtomic {
		apart(&x.mu, 100*time.Microsecond) // the state read and judged, then the write: two round trips
	}
	e.taskID = b.TaskID
	if x.bug == bugTornBind {
		apart(&x.mu, 50*time.Microsecond) // SET task_id, then SET reply, outside one transaction
	}
	e.reply = nil
	switch {
	case len(b.Reply) > 0:
		e.reply = bytes.Clone(b.Reply)
	case x.bug == bugStoresEmptyReply && b.Reply != nil:
		e.reply = []byte{}
	}
	return nil
}

func bindArgs(token idempotency.Token, b idempotency.Binding) error {
	if token == 0 {
		return invalid("zero token")
	}
	return checkBinding(b)
}

// extendArgs checks Extend's token and lease, as both test indexes do, unless the
// bug skips one of the checks.
func (b bug) extendArgs(token idempotency.Token, lease time.Duration) error {
	switch {
	case token == 0 && b != bugZeroTokenAfterLookup:
		return invalid("zero token")
	case lease <= 0 && b != bugExtendLeaseUnchecked:
		return invalid("lease %v is not positive", lease)
	}
	return nil
}

// judgeBind says whether binding e to b writes, succeeds without writing, or fails:
// idempotently (b may be the bound value or a part of it), and a task id alone may
// gain a reply.
func (x *refIndex) judgeBind(e *refEntry, b idempotency.Binding) (write bool, err error) {
	same := (b.TaskID == "" || e.taskID == b.TaskID) && (len(b.Reply) == 0 || bytes.Equal(e.reply, b.Reply))
	switch {
	case x.bug == bugBindOverwrites:
		return true, nil
	case x.bug == bugReplyRebindUnchecked && b.TaskID == "" && e.taskID != "" && e.reply != nil:
		return false, nil // "the task is the same, so is the reply"
	case same && !e.pending():
		if x.bug == bugRebindFails {
			return false, fmt.Errorf("refindex: bind: %w", idempotency.ErrAlreadyBound)
		}
		return false, nil
	case e.pending():
		return true, nil
	case e.taskID != "" && e.reply == nil && b.TaskID == e.taskID && x.bug != bugTaskCannotGainReply:
		return true, nil
	}
	return false, fmt.Errorf("refindex: bind: %w", idempotency.ErrAlreadyBound)
}

func (x *refIndex) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if token == 0 && x.bug != bugValidatesOnlyNewKeys && x.bug != bugZeroTokenAfterLookup {
		return invalid("zero token")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := refKey{scope, key}
	e, ok := x.live(k, x.now())
	if ok && token == 0 && x.bug == bugZeroTokenAfterLookup {
		return invalid("zero token")
	}
	switch {
	case !ok:
		if x.bug == bugReleaseNotHeldErr {
			return fmt.Errorf("refindex: release: %w", idempotency.ErrNotOwner)
		}
		return nil
	case e.token != token:
		return fmt.Errorf("refindex: release: %w", idempotency.ErrNotOwner)
	case !e.pending():
		return nil // a bound key is never released
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	switch x.bug {
	case bugReleaseKeepsKey:
		return nil
	case bugReleaseTombstone, bugExtendRevivesReleased:
		e.released = true // a soft delete: the row stays, marked
		return nil
	case bugReleaseNonAtomic:
		apart(&x.mu, 100*time.Microsecond) // the token checked, then DELETE by key
	}
	x.drop(k)
	return nil
}

func (x *refIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, false, err
	}
	if err := checkKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e, ok := x.live(refKey{scope, key}, now)
	if !ok || (x.bug == bugLookupHidesPending && e.pending()) {
		return idempotency.Record{}, false, nil
	}
	if x.bug == bugLookupExtendsLease && e.pending() {
		e.leaseEnd = now.Add(e.leaseLen) // GET, then EXPIRE: a touch
	}
	return x.recordOf(e), true, nil
}

func (x *refIndex) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if x.bug != bugExtendCtxAfterWrite {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if err := x.bug.extendArgs(token, lease); err != nil {
		return err
	}
	lease = x.bug.extendLease(lease)
	x.mu.Lock()
	defer x.mu.Unlock()
	now, k := x.now(), refKey{scope, key}
	r := x.keys[k] // before live drops it past its TTL
	e, ok := x.live(k, now)
	switch {
	case r == nil:
	case x.bug == bugExtendIgnoresTTL && !r.released, x.bug == bugExtendRevivesReleased && r.released:
		e, ok = r, true
	}
	if ok && token == 0 {
		return invalid("zero token")
	}
	if !ok || (e.token != token && x.bug != bugExtendIgnoresToken) || (!e.pending() && x.bug != bugExtendsBound) ||
		x.bug.extendLeaseEnded(e.leaseEnd, now) {
		return fmt.Errorf("refindex: extend: %w", idempotency.ErrNotOwner)
	}
	if x.bug == bugExtendNonAtomic {
		apart(&x.mu, 200*time.Microsecond) // SELECT and judge, then UPDATE ... WHERE key = ?
		if e = x.keys[k]; e == nil {
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
		x.held[scope]++
	case bugExtendCtxAfterWrite:
		return ctx.Err()
	}
	return nil
}
