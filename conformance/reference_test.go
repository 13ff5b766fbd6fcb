package conformance

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// refIndex is a small, correct KeyIndex: one mutex over one map, an injectable clock.
// The suite must pass on it; the broken indexes in broken_test.go are variants of it,
// and so are those its bug field selects (see bugs_test.go; zero is correct). It also
// implements Sweeper, CapacityReporter and Honouring, so that the optional checks run.
type refIndex struct {
	now   func() time.Time
	ttl   time.Duration // zero: keys never expire
	limit int           // keys per scope; zero: no bound
	bug   bug

	mu     sync.Mutex
	tokens idempotency.Token
	keys   map[refKey]*refEntry
	held   map[string]int // live and expired-but-not-dropped entries per scope
}

type refKey struct{ scope, key string }

type refEntry struct {
	messageID string
	token     idempotency.Token
	taskID    string
	reply     []byte
	claimedAt time.Time
	leaseEnd  time.Time
	leaseLen  time.Duration
	released  bool // only with bugReleaseTombstone
	replyOnly bool // only with bugReplyOnlyPending: pending means no task id
}

func (e *refEntry) pending() bool {
	if e.replyOnly {
		return e.taskID == ""
	}
	return e.taskID == "" && e.reply == nil
}

func (e *refEntry) record() idempotency.Record {
	return idempotency.Record{
		MessageID:      e.messageID,
		TaskID:         e.taskID,
		Reply:          bytes.Clone(e.reply),
		ClaimedAt:      e.claimedAt,
		LeaseExpiresAt: e.leaseEnd,
	}
}

// recordOf is e.record() as the index's bug returns it.
func (x *refIndex) recordOf(e *refEntry) idempotency.Record {
	r := e.record()
	switch x.bug {
	case bugAliasesRecords:
		r.Reply = e.reply
	case bugRecordLacksLease:
		r.LeaseExpiresAt = time.Time{}
	}
	return r
}

func (x *refIndex) leaseEnded(e *refEntry, now time.Time) bool {
	if x.bug == bugLeaseEndExclusive {
		return now.After(e.leaseEnd)
	}
	return !now.Before(e.leaseEnd)
}

var (
	_ idempotency.KeyIndex         = (*refIndex)(nil)
	_ idempotency.Sweeper          = (*refIndex)(nil)
	_ idempotency.CapacityReporter = (*refIndex)(nil)
	_ idempotency.Honouring        = (*refIndex)(nil)
)

func newRefIndex(now func() time.Time, ttl time.Duration, limit int) *refIndex {
	return &refIndex{now: now, ttl: ttl, limit: limit, keys: make(map[refKey]*refEntry), held: make(map[string]int)}
}

func newBuggyRefIndex(now func() time.Time, ttl time.Duration, limit int, b bug) *refIndex {
	x := newRefIndex(now, ttl, limit)
	x.bug = b
	return x
}

// apart unlocks mu for d, then locks it again: a bug's gap between what an index
// read and judged and what it writes, as between two round trips to a database.
// The caller holds mu.
func apart(mu *sync.Mutex, d time.Duration) {
	mu.Unlock()
	time.Sleep(d)
	mu.Lock()
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("refindex: %w: %s", idempotency.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func checkKey(key string) error {
	if err := idempotency.ValidateKey(key); err != nil {
		return fmt.Errorf("refindex: %w: %w", idempotency.ErrInvalidArgument, err)
	}
	return nil
}

// live returns the entry of k unless it is absent or past its time to live, in which
// case it is dropped. x.mu must be held.
func (x *refIndex) live(k refKey, now time.Time) (*refEntry, bool) {
	e, ok := x.keys[k]
	if !ok || e.released {
		return nil, false
	}
	if x.expired(e, now) {
		x.drop(k)
		return nil, false
	}
	return e, true
}

func (x *refIndex) expired(e *refEntry, now time.Time) bool {
	if x.ttl <= 0 || x.bug == bugIgnoresTTL {
		return false
	}
	if x.bug == bugTTLEndExclusive {
		return now.After(e.claimedAt.Add(x.ttl))
	}
	return !now.Before(e.claimedAt.Add(x.ttl))
}

// put stores e under k. x.mu must be held.
func (x *refIndex) put(k refKey, e *refEntry) {
	if _, ok := x.keys[k]; !ok {
		x.held[k.scope]++
	}
	x.keys[k] = e
}

// drop deletes k. x.mu must be held.
func (x *refIndex) drop(k refKey) {
	if _, ok := x.keys[k]; ok {
		delete(x.keys, k)
		x.held[k.scope]--
	}
}

// full reports whether scope holds as many live keys as allowed, dropping expired
// keys of the scope first. x.mu must be held.
func (x *refIndex) full(scope string, now time.Time) bool {
	if x.limit == 0 || x.held[scope] < x.limit {
		return false
	}
	for k := range x.keys {
		if k.scope == scope {
			x.live(k, now)
		}
	}
	return x.held[scope] >= x.limit
}

func (x *refIndex) newToken() idempotency.Token {
	x.tokens++
	return x.tokens
}

// tokenFor issues the token of a claim of k, which old held before (nil if none).
func (x *refIndex) tokenFor(old *refEntry) idempotency.Token {
	if x.bug == bugTokensNotUnique {
		// A counter per key, as in a "version" attribute: 1 for a new item.
		if old != nil && !old.released {
			return old.token + 1
		}
		return 1
	}
	return x.newToken()
}

func (x *refIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if x.bug != bugCtxOnlyOnWrites && x.bug != bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if err := checkKey(key); err != nil {
		return idempotency.Claim{}, err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if x.bug == bugLeaseWholeSeconds {
		lease = time.Duration(lease.Seconds()) * time.Second // EXPIRE takes whole seconds
	}
	if x.bug == bugNonAtomicCapacity {
		if c, done, err := x.claimCountingApart(ctx, scope, key, messageID, lease); done {
			return c, err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now, k := x.now(), refKey{scope, key}
	if x.bug == bugFullBeforeLookup && x.limit > 0 && x.held[scope] >= x.limit {
		return idempotency.Claim{}, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
	}
	old := x.keys[k]
	if old != nil && !old.released && x.expired(old, now) && x.bug == bugExpiredSameMessageHeld && old.messageID == messageID {
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: x.recordOf(old)}, nil
	}
	if e, ok := x.live(k, now); ok {
		switch {
		case e.messageID != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
		case e.pending() && x.leaseEnded(e, now):
			return x.takeover(ctx, e, now, lease)
		}
		r := x.recordOf(e)
		if x.bug == bugSameMessageEmptyRecord {
			r.TaskID, r.Reply = "", nil
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: r}, nil
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if x.bug == bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	claimedAt := now
	if old != nil && ((x.bug == bugExpiredReclaimKeepsClaimTime && !old.released) || (x.bug == bugReleaseTombstone && old.released)) {
		claimedAt = old.claimedAt // an upsert that keeps the row's claimed_at
	}
	if x.full(scope, now) {
		switch {
		case x.bug == bugEvictsAbandoned && x.evictAbandoned(scope, now):
		default:
			return idempotency.Claim{}, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
		}
	}
	e := &refEntry{messageID: messageID, token: x.tokenFor(old), claimedAt: claimedAt, leaseEnd: now.Add(lease),
		leaseLen: lease, replyOnly: x.bug == bugReplyOnlyPending}
	x.put(k, e)
	if x.bug == bugPhantomPlaces && old != nil && !old.released {
		x.held[scope]++ // the expired key's place not given back
	}
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

// takeover gives the abandoned claim e a new owner. x.mu is held.
func (x *refIndex) takeover(ctx context.Context, e *refEntry, now time.Time, lease time.Duration) (idempotency.Claim, error) {
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	old := e.token
	e.token = x.tokenFor(e)
	if x.bug == bugTakeoverTokenFromOld {
		e.token = old + 1 // the next version of the row
	}
	e.leaseEnd, e.leaseLen = x.bug.takeoverLease(now, e.claimedAt, e.leaseLen, lease)
	if x.bug == bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

// claimCountingApart is Claim of a new key by an index that counts the scope's keys
// in one step and inserts in another. It reports done false when the key is held.
func (x *refIndex) claimCountingApart(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, bool, error) {
	k := refKey{scope, key}
	x.mu.Lock()
	_, held := x.live(k, x.now())
	full := x.full(scope, x.now())
	x.mu.Unlock()
	if held {
		return idempotency.Claim{}, false, nil
	}
	if full {
		return idempotency.Claim{}, true, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
	}
	time.Sleep(100 * time.Microsecond) // SELECT COUNT(*), then INSERT
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, held := x.live(k, x.now()); held {
		return idempotency.Claim{}, false, nil
	}
	now := x.now()
	e := &refEntry{messageID: messageID, token: x.newToken(), claimedAt: now, leaseEnd: now.Add(lease), leaseLen: lease}
	x.put(k, e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, true, nil
}

// evictAbandoned drops one abandoned claim of scope, and reports whether it found one.
// x.mu is held.
func (x *refIndex) evictAbandoned(scope string, now time.Time) bool {
	for k, e := range x.keys {
		if k.scope == scope && e.pending() && x.leaseEnded(e, now) {
			x.drop(k)
			return true
		}
	}
	return false
}
