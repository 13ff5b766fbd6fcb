package conformance

import (
	"context"
	"errors"
	"time"

	"github.com/a2akit/idempotency"
)

// Indexes broken on purpose, the map-based versions of the first mutants of
// bugs_test.go. Each is the reference index with one method changed the way a real
// index could get it wrong; TestSuiteKillsEveryMutant shows that the suite notices.

// tokenOf returns the token that owns (scope, key) now, or 1 when none does.
func (x *refIndex) tokenOf(scope, key string) idempotency.Token {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.keys[refKey{scope, key}]; ok {
		return e.token
	}
	return 1
}

// nonAtomicClaim looks the key up and inserts it under two separate locks, with a
// pause between: concurrent Claims of a free key all see it free and all win.
type nonAtomicClaim struct{ *refIndex }

func (x nonAtomicClaim) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	k := refKey{scope, key}
	x.mu.Lock()
	_, held := x.live(k, x.now())
	x.mu.Unlock()
	if held || ctx.Err() != nil || idempotency.ValidateKey(key) != nil || messageID == "" || lease <= 0 {
		return x.refIndex.Claim(ctx, scope, key, messageID, lease)
	}
	time.Sleep(100 * time.Microsecond) // SELECT, then INSERT without a unique constraint
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e := &refEntry{messageID: messageID, token: x.newToken(), claimedAt: now, leaseEnd: now.Add(lease)}
	x.put(k, e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

// releaseIgnoresToken releases whatever pending claim holds the key.
type releaseIgnoresToken struct{ *refIndex }

func (x releaseIgnoresToken) Release(ctx context.Context, scope, key string, _ idempotency.Token) error {
	return x.refIndex.Release(ctx, scope, key, x.tokenOf(scope, key))
}

// bindIgnoresToken binds whatever claim holds the key: no fencing.
type bindIgnoresToken struct{ *refIndex }

func (x bindIgnoresToken) Bind(ctx context.Context, scope, key string, _ idempotency.Token, b idempotency.Binding) error {
	return x.refIndex.Bind(ctx, scope, key, x.tokenOf(scope, key), b)
}

// forgetsDeletedTasks deletes the keys bound to a task when the task is deleted, as a
// foreign key with ON DELETE CASCADE would.
type forgetsDeletedTasks struct{ *refIndex }

func (x forgetsDeletedTasks) taskDeleted(taskID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, e := range x.keys {
		if e.taskID == taskID {
			x.drop(k)
		}
	}
}

// replayRefreshesClaim stamps the claim time and the lease anew on every retry.
type replayRefreshesClaim struct{ *refIndex }

func (x replayRefreshesClaim) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.HeldBySameMessage {
		x.mu.Lock()
		defer x.mu.Unlock()
		if e, ok := x.keys[refKey{scope, key}]; ok {
			now := x.now()
			e.claimedAt = now
			if e.pending() {
				e.leaseEnd = now.Add(lease)
			}
		}
	}
	return c, err
}

// ignoresTTL keeps keys forever, whatever TTL it was built with.
func ignoresTTL(x *refIndex) idempotency.KeyIndex {
	x.ttl = 0
	return x
}

// leaksHolder tells a different message who holds the key, and with which token.
type leaksHolder struct{ *refIndex }

func (x leaksHolder) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.HeldByOtherMessage {
		x.mu.Lock()
		defer x.mu.Unlock()
		if e, ok := x.keys[refKey{scope, key}]; ok {
			c.Record, c.Token = e.record(), e.token
		}
	}
	return c, err
}

// takeoverKeepsToken hands the new owner of a claim taken over the old owner's token,
// so the old owner is not fenced out.
type takeoverKeepsToken struct{ *refIndex }

func (x takeoverKeepsToken) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	k := refKey{scope, key}
	x.mu.Lock()
	var old idempotency.Token
	if e, ok := x.keys[k]; ok {
		old = e.token
	}
	x.mu.Unlock()
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.Claimed && old != 0 {
		x.mu.Lock()
		defer x.mu.Unlock()
		if e, ok := x.keys[k]; ok {
			e.token, c.Token = old, old
		}
	}
	return c, err
}

// takeoverResetsClaimTime stamps the claim time anew on a takeover, so a key that
// keeps being taken over never expires.
type takeoverResetsClaimTime struct{ *refIndex }

func (x takeoverResetsClaimTime) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	k := refKey{scope, key}
	x.mu.Lock()
	_, existed := x.keys[k]
	x.mu.Unlock()
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.Claimed && existed {
		x.mu.Lock()
		defer x.mu.Unlock()
		if e, ok := x.keys[k]; ok {
			e.claimedAt = x.now()
		}
	}
	return c, err
}

// takeoverByOtherMessage lets any message take over a claim whose lease ended.
type takeoverByOtherMessage struct{ *refIndex }

func (x takeoverByOtherMessage) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if err == nil && c.Status == idempotency.HeldByOtherMessage {
		x.mu.Lock()
		defer x.mu.Unlock()
		now := x.now()
		if e, ok := x.keys[refKey{scope, key}]; ok && e.pending() && !now.Before(e.leaseEnd) {
			e.messageID, e.token, e.leaseEnd = messageID, x.newToken(), now.Add(lease)
			return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
		}
	}
	return c, err
}

// releasesBound lets the owner release a bound key.
type releasesBound struct{ *refIndex }

func (x releasesBound) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := x.refIndex.Release(ctx, scope, key, token); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := refKey{scope, key}
	if e, ok := x.keys[k]; ok && e.token == token {
		x.drop(k)
	}
	return nil
}

// sweepsPendingClaims deletes old pending claims even while their lease runs.
type sweepsPendingClaims struct{ *refIndex }

func (x sweepsPendingClaims) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	return x.purge(ctx, p, func(*refEntry, time.Time) bool { return true })
}

// aliasesReply keeps the caller's reply slice instead of a copy.
type aliasesReply struct{ *refIndex }

func (x aliasesReply) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := x.refIndex.Bind(ctx, scope, key, token, b); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.keys[refKey{scope, key}]; ok && b.Reply != nil {
		e.reply = b.Reply
	}
	return nil
}

// evictsWhenFull makes room in a full scope by dropping a pending claim.
type evictsWhenFull struct{ *refIndex }

func (x evictsWhenFull) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	c, err := x.refIndex.Claim(ctx, scope, key, messageID, lease)
	if !errors.Is(err, idempotency.ErrFull) {
		return c, err
	}
	x.mu.Lock()
	for k, e := range x.keys {
		if k.scope == scope && e.pending() {
			x.drop(k)
			break
		}
	}
	x.mu.Unlock()
	return x.refIndex.Claim(ctx, scope, key, messageID, lease)
}
