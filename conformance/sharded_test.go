package conformance

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// shardIndex is a test-only copy of memstore's design, the second body the broken
// indexes are written on: keys spread over independently locked shards by a seeded
// hash, each shard's map keyed by that hash with a spill map for collisions, tokens
// from per-shard sequences with the shard's number in their low bits, and per-scope
// counts kept in atomics outside the shards. Entries are changed in place, as
// memstore's are. Its bug field selects one slip (see bugs_test.go); zero is correct.
type shardIndex struct {
	now   func() time.Time
	ttl   time.Duration
	limit int64
	bug   bug
	seed  maphash.Seed

	scopes sync.Map // scope → *atomic.Int64
	shards [shardCount]shardPart
}

const (
	shardBits  = 4
	shardCount = 1 << shardBits
)

type shardPart struct {
	mu    sync.Mutex
	keys  map[uint64]*shEntry
	spill map[string]*shEntry
	id    uint64
	seq   uint64
}

type shEntry struct {
	mapKey    string // key + "\x00" + scope
	hash      uint64
	scope     string
	messageID string
	taskID    string
	reply     []byte
	claimedAt time.Time
	leaseEnd  time.Time
	leaseLen  time.Duration
	token     idempotency.Token
	released  bool // only with bugReleaseTombstone
}

var (
	_ idempotency.KeyIndex         = (*shardIndex)(nil)
	_ idempotency.Sweeper          = (*shardIndex)(nil)
	_ idempotency.CapacityReporter = (*shardIndex)(nil)
	_ idempotency.Honouring        = (*shardIndex)(nil)
)

func newShardIndex(now func() time.Time, ttl time.Duration, limit int, b bug) *shardIndex {
	x := &shardIndex{now: now, ttl: ttl, limit: int64(limit), bug: b, seed: maphash.MakeSeed()}
	for i := range x.shards {
		x.shards[i].id = uint64(i)
		x.shards[i].keys = make(map[uint64]*shEntry)
	}
	return x
}

func (sh *shardPart) get(h uint64, mk string) *shEntry {
	if e := sh.keys[h]; e != nil && e.mapKey == mk {
		return e
	}
	return sh.spill[mk]
}

func (sh *shardPart) put(e *shEntry) {
	if o := sh.keys[e.hash]; o == nil || o.mapKey == e.mapKey {
		sh.keys[e.hash] = e
		return
	}
	if sh.spill == nil {
		sh.spill = make(map[string]*shEntry)
	}
	sh.spill[e.mapKey] = e
}

func (sh *shardPart) del(e *shEntry) {
	if sh.keys[e.hash] == e {
		delete(sh.keys, e.hash)
	} else {
		delete(sh.spill, e.mapKey)
	}
}

func (sh *shardPart) each(f func(e *shEntry)) {
	for _, e := range sh.keys {
		f(e)
	}
	for _, e := range sh.spill {
		f(e)
	}
}

func (x *shardIndex) nextToken(sh *shardPart) idempotency.Token {
	sh.seq++
	if x.bug == bugTokensNotUnique {
		return idempotency.Token(sh.seq) // the shard's number left out
	}
	return idempotency.Token(sh.seq<<shardBits | sh.id)
}

func (x *shardIndex) locate(scope, key string) (*shardPart, uint64, string) {
	mk := key + "\x00" + scope
	h := maphash.String(x.seed, mk)
	return &x.shards[h&(shardCount-1)], h, mk
}

func (x *shardIndex) pending(e *shEntry) bool {
	if x.bug == bugReplyOnlyPending {
		return e.taskID == ""
	}
	return e.taskID == "" && e.reply == nil
}

func (x *shardIndex) expired(e *shEntry, now time.Time) bool {
	switch x.bug {
	case bugIgnoresTTL:
		return false
	case bugTTLEndExclusive:
		return now.After(e.claimedAt.Add(x.ttl))
	}
	return !now.Before(e.claimedAt.Add(x.ttl))
}

func (x *shardIndex) leaseEnded(e *shEntry, now time.Time) bool {
	if x.bug == bugLeaseEndExclusive {
		return now.After(e.leaseEnd)
	}
	return !now.Before(e.leaseEnd)
}

// live returns the entry of the key unless it is absent, released or expired.
func (x *shardIndex) live(sh *shardPart, h uint64, mk string, now time.Time) *shEntry {
	e := sh.get(h, mk)
	if e == nil || e.released || x.expired(e, now) {
		return nil
	}
	return e
}

func (x *shardIndex) record(e *shEntry) idempotency.Record {
	r := idempotency.Record{MessageID: e.messageID, TaskID: e.taskID, Reply: e.reply,
		ClaimedAt: e.claimedAt, LeaseExpiresAt: e.leaseEnd}
	if x.bug != bugAliasesRecords {
		r.Reply = bytes.Clone(e.reply)
	}
	if x.bug == bugRecordLacksLease {
		r.LeaseExpiresAt = time.Time{}
	}
	return r
}

func (x *shardIndex) count(scope string) *atomic.Int64 {
	v, _ := x.scopes.LoadOrStore(scope, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// reserve counts one more key in scope, or reports false when it is full.
func (x *shardIndex) reserve(scope string) bool {
	c := x.count(scope)
	if x.bug == bugNonAtomicCapacity {
		n := c.Load() // read the count, then write it back: GET, then SET
		if x.limit > 0 && n >= x.limit {
			return false
		}
		time.Sleep(100 * time.Microsecond)
		c.Store(n + 1)
		return true
	}
	for {
		n := c.Load()
		if x.limit > 0 && n >= x.limit {
			return false
		}
		if c.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (x *shardIndex) unreserve(scope string) { x.count(scope).Add(-1) }

func validKey(key string) error {
	if err := idempotency.ValidateKey(key); err != nil {
		return fmt.Errorf("shardindex: %w: %w", idempotency.ErrInvalidArgument, err)
	}
	return nil
}

func claimArgs(messageID string, lease time.Duration) error {
	switch {
	case messageID == "":
		return invalid("empty message id")
	case lease <= 0:
		return invalid("lease %v is not positive", lease)
	}
	return nil
}

func (x *shardIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if x.bug != bugCtxOnlyOnWrites && x.bug != bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, fmt.Errorf("shardindex: claim: %w", err)
		}
	}
	if err := validKey(key); err != nil {
		return idempotency.Claim{}, err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if x.bug == bugLeaseWholeSeconds {
		lease = lease.Truncate(time.Second)
	}
	for range 2 {
		c, full, err := x.claim(ctx, scope, key, messageID, lease)
		if !full {
			return c, err
		}
		switch x.bug {
		case bugEvictsWhenFull:
			x.evict(scope, func(e *shEntry, _ time.Time) bool { return true })
		case bugEvictsAbandoned:
			x.evict(scope, func(e *shEntry, now time.Time) bool { return x.pending(e) && x.leaseEnded(e, now) })
		default:
			return idempotency.Claim{}, fmt.Errorf("shardindex: scope %q: %w", scope, idempotency.ErrFull)
		}
	}
	return idempotency.Claim{}, fmt.Errorf("shardindex: scope %q: %w", scope, idempotency.ErrFull)
}

// evict drops one entry of scope that may allows, to make room.
func (x *shardIndex) evict(scope string, may func(e *shEntry, now time.Time) bool) {
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		var victim *shEntry
		now := x.now()
		sh.each(func(e *shEntry) {
			if victim == nil && e.scope == scope && may(e, now) {
				victim = e
			}
		})
		if victim != nil {
			sh.del(victim)
			x.unreserve(scope)
		}
		sh.mu.Unlock()
		if victim != nil {
			return
		}
	}
}

func (x *shardIndex) claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, bool, error) {
	sh, h, mk := x.locate(scope, key)
	if x.bug == bugNonAtomicClaim {
		sh.mu.Lock()
		e := x.live(sh, h, mk, x.now())
		sh.mu.Unlock()
		if e == nil {
			time.Sleep(100 * time.Microsecond) // look up, then insert: no conditional write
			sh.mu.Lock()
			defer sh.mu.Unlock()
			now := x.now()
			e := &shEntry{mapKey: mk, hash: h, scope: scope, messageID: messageID, claimedAt: now,
				leaseEnd: now.Add(lease), leaseLen: lease, token: x.nextToken(sh)}
			if sh.get(h, mk) == nil && !x.reserve(scope) {
				return idempotency.Claim{}, true, nil
			}
			sh.put(e)
			return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, false, nil
		}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := x.now()
	if x.bug == bugFullBeforeLookup && x.limit > 0 && x.count(scope).Load() >= x.limit {
		return idempotency.Claim{}, true, nil
	}
	old := sh.get(h, mk)
	if old != nil && !old.released && x.expired(old, now) && x.bug == bugExpiredSameMessageHeld && old.messageID == messageID {
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: x.record(old)}, false, nil
	}
	if e := x.live(sh, h, mk, now); e != nil {
		switch {
		case e.messageID != messageID:
			if x.bug == bugTakeoverByOtherMessage && x.pending(e) && x.leaseEnded(e, now) {
				e.messageID = messageID
				return x.takeover(ctx, sh, e, now, lease)
			}
			if x.bug == bugLeaksHolder {
				return idempotency.Claim{Status: idempotency.HeldByOtherMessage, Token: e.token, Record: x.record(e)}, false, nil
			}
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, false, nil
		case x.pending(e) && x.leaseEnded(e, now):
			return x.takeover(ctx, sh, e, now, lease)
		}
		if x.bug == bugReplayRefreshesClaim {
			e.claimedAt = now
			if x.pending(e) {
				e.leaseEnd = now.Add(lease)
			}
		}
		r := x.record(e)
		if x.bug == bugSameMessageEmptyRecord {
			r.TaskID, r.Reply = "", nil
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: r}, false, nil
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, false, fmt.Errorf("shardindex: claim: %w", err)
		}
	}
	if x.bug == bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, false, err
		}
	}
	claimedAt := now
	if old != nil {
		// Released or past its TTL: it hands its place in the scope's count on.
		if (x.bug == bugExpiredReclaimKeepsClaimTime && !old.released) || (x.bug == bugReleaseTombstone && old.released) {
			claimedAt = old.claimedAt
		}
		sh.del(old)
		if x.bug == bugPhantomPlaces && !old.released {
			x.count(scope).Add(1) // the expired key's place not given back
		}
	} else if !x.reserve(scope) {
		return idempotency.Claim{}, true, nil
	}
	e := &shEntry{mapKey: mk, hash: h, scope: scope, messageID: messageID, claimedAt: claimedAt,
		leaseEnd: now.Add(lease), leaseLen: lease, token: x.nextToken(sh)}
	sh.put(e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, false, nil
}

// takeover gives the abandoned claim e a new owner. sh.mu is held.
func (x *shardIndex) takeover(ctx context.Context, sh *shardPart, e *shEntry, now time.Time, lease time.Duration) (idempotency.Claim, bool, error) {
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, false, fmt.Errorf("shardindex: claim: %w", err)
		}
	}
	switch x.bug {
	case bugTakeoverKeepsToken:
	case bugTakeoverTokenFromOld:
		e.token += shardCount // the shard's next sequence number, from the old token
	default:
		e.token = x.nextToken(sh)
	}
	e.leaseEnd, e.leaseLen = x.bug.takeoverLease(now, e.claimedAt, e.leaseLen, lease)
	if x.bug == bugTakeoverResetsClaimTime {
		e.claimedAt = now
	}
	if x.bug == bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, false, fmt.Errorf("shardindex: claim: %w", err)
		}
	}
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, false, nil
}
