package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// DefaultMaxKeysPerScope is the per-scope capacity of a [Store] whose
// [Options.MaxKeysPerScope] is zero.
const DefaultMaxKeysPerScope = 100_000

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// TTL is how long a key lives, counted from its first claim. Replays and lease
	// takeovers do not extend it. Past it, the key counts as absent: Claim takes it
	// afresh, Lookup reports it absent, and Bind and Release treat it as no longer
	// held. Zero or negative means [idempotency.DefaultKeyMaxAge] (24 hours).
	TTL time.Duration

	// MaxKeysPerScope bounds the number of keys one scope holds, counting pending and
	// bound keys. Zero means [DefaultMaxKeysPerScope]; a negative value removes the
	// bound.
	MaxKeysPerScope int

	// MaxBytes bounds the memory of all keys of all scopes together, as counted by
	// [Store.Bytes]: each key its text plus [KeyOverhead], each scope that holds keys
	// its name plus [ScopeOverhead]. A Claim that would go past it returns an error
	// wrapping [idempotency.ErrFull] (after dropping expired keys), and so does a Bind
	// whose Reply does not fit. Zero means [DefaultMaxBytes]; a negative value removes
	// the bound (memory then grows with the keys claimed within one TTL). Since the
	// scope is usually the client's tenant, MaxKeysPerScope alone bounds nothing
	// against a client that names a new tenant per send; MaxBytes does. Together they
	// mean one busy tenant cannot take more than MaxKeysPerScope keys, while many
	// tenants together cannot take more than MaxBytes.
	MaxBytes int64

	// Now returns the current time; nil means time.Now. Tests inject a controllable
	// clock. The store measures ages and leases with [time.Time.Sub] against the time
	// it read when it was created, so a clock whose readings carry a monotonic clock
	// reading (as time.Now's do) is immune to changes of the wall clock. A clock that
	// goes backwards is safe: a key whose claim time lies in the future is simply young,
	// and is never deleted early.
	Now func() time.Time
}

// Store is an in-memory [idempotency.KeyIndex]. It also implements
// [idempotency.Sweeper] and [idempotency.CapacityReporter]. Create it with [New] (the
// zero Store is not usable); it is safe for concurrent use, starts no goroutine and
// needs no Close.
//
// A held key takes its text (key, scope, message id, task id and reply, in one
// allocation) and about 115 bytes more: a bound key with a 32-byte key, a short scope
// and UUID message and task ids takes about 225 bytes in all; a scope that holds keys
// about 175 bytes more. The store counts each against [Options.MaxBytes] with
// [KeyOverhead] and [ScopeOverhead], which are above what they take; a key counts at
// most [MaxKeyBytes]. A Claim of a new key makes two allocations. Records returned by Claim and Lookup share no memory with the store
// that a caller could change: Reply is a fresh copy, and strings are immutable.
type Store struct {
	ttl   int64            // nanoseconds
	limit int64            // keys per scope; 0 means no bound
	max   int64            // bytes in all; 0 means no bound
	used  atomic.Int64     // bytes counted against max
	now   func() time.Time // nil: time.Since(base)
	base  time.Time        // the clock's reading at New; the store keeps times as nanoseconds since base
	seed  maphash.Seed

	scopes sync.Map // scope string → *scopeCount

	shards [numShards]shard
}

var (
	_ idempotency.KeyIndex         = (*Store)(nil)
	_ idempotency.Sweeper          = (*Store)(nil)
	_ idempotency.CapacityReporter = (*Store)(nil)
)

const (
	// popsPerClaim is how many of the oldest entries of its shard a Claim examines for
	// expiry. More than one, so that expired keys drain faster than claims add keys.
	// (An entry's text, bounded by idempotency.CheckLengths, always fits the 32 bits
	// entries index it with.)
	popsPerClaim = 4
)

// New returns an empty Store configured by opts.
func New(opts Options) *Store {
	s := &Store{
		ttl:  int64(opts.TTL),
		now:  opts.Now,
		seed: maphash.MakeSeed(),
	}
	if s.ttl <= 0 {
		s.ttl = int64(idempotency.DefaultKeyMaxAge)
	}
	switch {
	case opts.MaxKeysPerScope == 0:
		s.limit = DefaultMaxKeysPerScope
	case opts.MaxKeysPerScope > 0:
		s.limit = int64(opts.MaxKeysPerScope)
	}
	switch {
	case opts.MaxBytes == 0:
		s.max = DefaultMaxBytes
	case opts.MaxBytes > 0:
		s.max = opts.MaxBytes
	}
	if s.now != nil {
		s.base = s.now()
	} else {
		s.base = time.Now()
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.id = uint64(i)
		sh.keys = make(map[uint64]*entry)
	}
	return s
}

// Claim implements [idempotency.KeyIndex.Claim]. A takeover's lease counts from the
// takeover. Each Claim of a new key also deletes up to a few expired keys of its
// shard. When the scope, or the store, is full, Claim deletes the expired keys of the
// whole store, which takes every shard's lock in turn, and tries once more before it
// returns an error wrapping [idempotency.ErrFull]. Values past the bounds of
// [idempotency.CheckLengths] are refused with [idempotency.ErrInvalidArgument].
func (s *Store) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	switch {
	case messageID == "":
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w: empty message id", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	if err := idempotency.CheckLengths(scope, messageID, idempotency.Binding{}); err != nil {
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w", err)
	}
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w", err)
	}
	h := maphash.Bytes(s.seed, k)
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w", err)
		}
		c, full := s.claim(h, k, scope, messageID, lease)
		if full == "" {
			return c, nil
		}
		if retried {
			return idempotency.Claim{}, fmt.Errorf("memstore: claim: %s: %w", full, idempotency.ErrFull)
		}
		s.dropExpired()
	}
}

// claim is Claim under the shard's lock. It reports what is full, and changes
// nothing, when the key is absent and its scope or the store has no room.
func (s *Store) claim(h uint64, k []byte, scope, messageID string, lease time.Duration) (c idempotency.Claim, full string) {
	sh := s.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Read the clock under the lock, so that the shard's FIFO is in claim-time order.
	now := s.clock()
	old := sh.get(h, k)
	if old != nil && !s.expired(old, now) {
		switch {
		case old.messageID() != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, ""
		case old.pending() && now >= old.leaseEnd:
			// The owner's lease ended: take the claim over, keeping its claim time.
			old.token = sh.nextToken()
			old.leaseEnd = addSat(now, lease)
			return idempotency.Claim{Status: idempotency.Claimed, Token: old.token}, ""
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: s.record(old)}, ""
	}
	if old != nil {
		// Past its TTL: it hands its place in the scope's count to its successor.
		sh.del(old)
		s.uncharge(old)
	} else if !s.reserve(scope) {
		return idempotency.Claim{}, fmt.Sprintf("the scope holds %d keys", s.limit)
	}
	if !s.charge(keyCost(len(k) + len(messageID))) {
		s.unreserve(scope)
		return idempotency.Claim{}, fmt.Sprintf("the store holds %d bytes of keys", s.max)
	}
	text := string(append(k, messageID...))
	e := &entry{
		text:      text,
		hash:      h,
		claimedAt: now,
		leaseEnd:  addSat(now, lease),
		token:     sh.nextToken(),
		keyLen:    uint32(len(k)),
		msgEnd:    uint32(len(text)),
		taskEnd:   uint32(len(text)),
	}
	sh.put(e)
	sh.push(e)
	s.expireHeads(sh, now, popsPerClaim)
	sh.tidy()
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, ""
}

// Bind implements [idempotency.KeyIndex.Bind]. A Reply counts as set when it is not
// empty, so a Binding of an empty task id and an empty (or nil) Reply is refused as
// empty. The store keeps a copy of the Reply. A task id or Reply past the bounds of
// [idempotency.CheckLengths] is refused with [idempotency.ErrInvalidArgument], and a
// binding that would take the store past [Options.MaxBytes] with
// [idempotency.ErrFull]; the key is then left as it was.
func (s *Store) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	switch {
	case token == 0:
		return fmt.Errorf("memstore: bind: %w: zero token", idempotency.ErrInvalidArgument)
	case b.TaskID == "" && len(b.Reply) == 0:
		return fmt.Errorf("memstore: bind: %w: empty binding", idempotency.ErrInvalidArgument)
	}
	if err := idempotency.CheckLengths("", "", b); err != nil {
		return fmt.Errorf("memstore: bind: %w", err)
	}
	sh, e, err := s.lockKey(ctx, "bind", scope, key)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	if e == nil || e.token != token || s.expired(e, s.clock()) {
		return fmt.Errorf("memstore: bind: %w", idempotency.ErrNotOwner)
	}
	switch {
	case e.pending():
	case (b.TaskID == "" || e.taskID() == b.TaskID) && (len(b.Reply) == 0 || e.reply() == string(b.Reply)):
		// The value already bound, or a part of it.
		return nil
	case e.taskID() == b.TaskID && e.reply() == "" && b.TaskID != "":
		// A task binding gains the agent's Message reply.
	default:
		return fmt.Errorf("memstore: bind: %w", idempotency.ErrAlreadyBound)
	}
	// A task binding that gains a Reply keeps its task id, which is counted already.
	grow := len(b.TaskID) + len(b.Reply) - (len(e.text) - int(e.msgEnd))
	if !s.charge(int64(grow)) {
		return fmt.Errorf("memstore: bind: the store holds %d bytes of keys: %w", s.max, idempotency.ErrFull)
	}
	// Copy the binding into a new text, so that the key's memory stays one allocation
	// and no caller's buffer is retained.
	var t strings.Builder
	t.Grow(int(e.msgEnd) + len(b.TaskID) + len(b.Reply))
	t.WriteString(e.text[:e.msgEnd])
	t.WriteString(b.TaskID)
	t.Write(b.Reply)
	e.text = t.String()
	e.taskEnd = e.msgEnd + uint32(len(b.TaskID))
	return nil
}

// Release implements [idempotency.KeyIndex.Release].
func (s *Store) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if token == 0 {
		return fmt.Errorf("memstore: release: %w: zero token", idempotency.ErrInvalidArgument)
	}
	sh, e, err := s.lockKey(ctx, "release", scope, key)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	switch {
	case e == nil || s.expired(e, s.clock()):
		return nil
	case e.token != token:
		return fmt.Errorf("memstore: release: %w", idempotency.ErrNotOwner)
	case !e.pending():
		return nil
	}
	s.remove(sh, e)
	sh.tidy()
	return nil
}

// Extend implements [idempotency.KeyIndex.Extend]. It takes the lock of the key's
// shard only.
func (s *Store) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	switch {
	case token == 0:
		return fmt.Errorf("memstore: extend: %w: zero token", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return fmt.Errorf("memstore: extend: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	sh, e, err := s.lockKey(ctx, "extend", scope, key)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	now := s.clock()
	if e == nil || e.token != token || s.expired(e, now) || !e.pending() || now >= e.leaseEnd {
		return fmt.Errorf("memstore: extend: %w", idempotency.ErrNotOwner)
	}
	e.leaseEnd = addSat(now, lease)
	return nil
}

// Lookup implements [idempotency.KeyIndex.Lookup]. It takes the lock of the key's
// shard only: lookups of other keys, and claims, proceed in parallel.
func (s *Store) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	sh, e, err := s.lockKey(ctx, "lookup", scope, key)
	if err != nil {
		return idempotency.Record{}, false, err
	}
	defer sh.mu.Unlock()
	if e == nil || s.expired(e, s.clock()) {
		return idempotency.Record{}, false, nil
	}
	return s.record(e), true, nil
}

// Capacity implements [idempotency.CapacityReporter]. Held counts the keys of scope
// that are pending or bound, including expired keys not yet deleted (a Claim in a full
// scope deletes them first). Limit is zero when the store has no per-scope bound.
func (s *Store) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Capacity{}, fmt.Errorf("memstore: capacity: %w", err)
	}
	c := idempotency.Capacity{Limit: int(s.limit)}
	if v, ok := s.scopes.Load(scope); ok {
		c.Held = int(max(v.(*scopeCount).held.Load(), 0))
	}
	return c, nil
}

// lockKey checks the key, then ctx, locks the shard of (scope, key) and returns it
// with the key's entry (nil when absent, expired or not). The caller unlocks sh.mu.
// op names the operation in errors.
func (s *Store) lockKey(ctx context.Context, op, scope, key string) (*shard, *entry, error) {
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return nil, nil, fmt.Errorf("memstore: %s: %w", op, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("memstore: %s: %w", op, err)
	}
	h := maphash.Bytes(s.seed, k)
	sh := s.shard(h)
	sh.mu.Lock()
	return sh, sh.get(h, k), nil
}

// keyBufLen is the size of the stack buffer that holds a map key: enough for the
// longest key and a short scope.
const keyBufLen = idempotency.MaxKeyLength + 1 + 64

// appendMapKey appends the map key of (scope, key) to b, after checking the key.
func appendMapKey(b []byte, scope, key string) ([]byte, error) {
	if err := idempotency.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("%w: %w", idempotency.ErrInvalidArgument, err)
	}
	if err := idempotency.CheckLengths(scope, "", idempotency.Binding{}); err != nil {
		return nil, err
	}
	b = append(b, key...)
	b = append(b, 0)
	return append(b, scope...), nil
}

// shard returns the shard of the map key whose hash is h.
func (s *Store) shard(h uint64) *shard { return &s.shards[h&(numShards-1)] }

// record returns what e holds, copying the reply.
func (s *Store) record(e *entry) idempotency.Record {
	r := idempotency.Record{
		MessageID:      e.messageID(),
		TaskID:         e.taskID(),
		ClaimedAt:      s.time(e.claimedAt),
		LeaseExpiresAt: s.time(e.leaseEnd),
	}
	if reply := e.reply(); reply != "" {
		r.Reply = []byte(reply)
	}
	return r
}

// remove deletes e, which is in sh, and gives its place in its scope and its bytes
// back. The caller holds sh.mu.
func (s *Store) remove(sh *shard, e *entry) {
	sh.del(e)
	s.uncharge(e)
	s.unreserve(e.scope())
}
