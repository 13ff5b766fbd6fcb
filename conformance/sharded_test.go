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
	if x.bug != bugTakeoverKeepsToken {
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
		if token == 0 {
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
	if e == nil || e.released || (x.bug != bugBindIgnoresTTL && x.expired(e, x.now())) ||
		(e.token != token && x.bug != bugBindIgnoresToken) {
		return fmt.Errorf("shardindex: bind: %w", idempotency.ErrNotOwner)
	}
	same := (b.TaskID == "" || e.taskID == b.TaskID) && (len(b.Reply) == 0 || bytes.Equal(e.reply, b.Reply))
	switch {
	case x.bug == bugBindOverwrites:
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
		sh.mu.Unlock() // the state read and judged, then the write: two round trips
		time.Sleep(100 * time.Microsecond)
		sh.mu.Lock()
	}
	e.taskID = b.TaskID
	if x.bug == bugTornBind {
		sh.mu.Unlock() // HSET task, then HSET reply, outside one transaction
		time.Sleep(50 * time.Microsecond)
		sh.mu.Lock()
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
	if token == 0 && x.bug != bugValidatesOnlyNewKeys {
		return invalid("zero token")
	}
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := x.live(sh, h, mk, x.now())
	switch {
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
	case bugReleaseTombstone:
		e.released = true
		return nil
	case bugReleaseNonAtomic:
		sh.mu.Unlock() // the token checked, then DEL by key
		time.Sleep(100 * time.Microsecond)
		sh.mu.Lock()
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
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("shardindex: extend: %w", err)
	}
	if err := validKey(key); err != nil {
		return err
	}
	switch {
	case token == 0:
		return invalid("zero token")
	case lease <= 0:
		return invalid("lease %v is not positive", lease)
	}
	sh, h, mk := x.locate(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := x.now()
	e := x.live(sh, h, mk, now)
	if e == nil || e.token != token || !x.pending(e) || x.leaseEnded(e, now) {
		return fmt.Errorf("shardindex: extend: %w", idempotency.ErrNotOwner)
	}
	e.leaseEnd, e.leaseLen = now.Add(lease), lease
	return nil
}

func (x *shardIndex) HonoursKeys(context.Context) bool { return true }

func (x *shardIndex) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Capacity{}, err
	}
	c := idempotency.Capacity{Held: int(x.count(scope).Load()), Limit: int(x.limit)}
	if x.bug == bugCapacityMissesEmptyScope && scope == "" {
		c.Held = 0
	}
	if x.bug == bugReportsNoLimit {
		c.Limit = 0
	}
	return c, nil
}

func (x *shardIndex) taskDeleted(taskID string) {
	if x.bug != bugForgetsDeletedTasks {
		return
	}
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		sh.each(func(e *shEntry) {
			if e.taskID == taskID {
				sh.del(e)
				x.unreserve(e.scope)
			}
		})
		sh.mu.Unlock()
	}
}

func (x *shardIndex) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	var rep idempotency.PurgeReport
	age, ok := p.EffectiveKeyMaxAge()
	if !ok {
		rep.Complete = true
		return rep, nil
	}
	age = min(age, x.ttl)
	size := p.EffectiveBatchSize()
	for p.MaxBatches <= 0 || rep.Batches < p.MaxBatches {
		if err := ctx.Err(); err != nil {
			if x.bug == bugSweepLosesReportOnCancel {
				return idempotency.PurgeReport{}, err
			}
			return rep, fmt.Errorf("shardindex: purge: %w", err)
		}
		n := x.purgeBatch(age, size)
		rep.Batches++
		if x.bug == bugSweepReportsBatchSize {
			rep.KeysDeleted += int64(size)
		} else {
			rep.KeysDeleted += int64(n)
		}
		if n < size {
			rep.Complete = true
			return rep, nil
		}
	}
	return rep, nil
}

// deletable reports whether a sweep of the given age deletes e.
func (x *shardIndex) deletable(e *shEntry, age time.Duration, now time.Time) bool {
	old := now.Sub(e.claimedAt) >= age
	switch x.bug {
	case bugSweepsPendingClaims:
		return old
	case bugSweepsAbandonedYoung:
		return (old && !x.pending(e)) || (x.pending(e) && x.leaseEnded(e, now))
	}
	return old && (!x.pending(e) || x.leaseEnded(e, now))
}

func (x *shardIndex) purgeBatch(age time.Duration, size int) int {
	type picked struct {
		sh *shardPart
		e  *shEntry
	}
	var batch []picked
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		now := x.now()
		sh.each(func(e *shEntry) {
			if len(batch) < size && x.deletable(e, age, now) {
				batch = append(batch, picked{sh, e})
			}
		})
		if x.bug != bugSweepSnapshot {
			for _, p := range batch {
				if p.sh == sh {
					sh.del(p.e)
					x.unreserve(p.e.scope)
				}
			}
		}
		sh.mu.Unlock()
	}
	if x.bug == bugSweepSnapshot {
		// SELECT the keys, then DELETE them by key, judged once.
		time.Sleep(200 * time.Microsecond)
		for _, p := range batch {
			p.sh.mu.Lock()
			if e := p.sh.get(p.e.hash, p.e.mapKey); e != nil {
				p.sh.del(e)
				x.unreserve(e.scope)
			}
			p.sh.mu.Unlock()
		}
	}
	return len(batch)
}
