package memstore

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

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
	// bound (memory then grows with the number of keys claimed within one TTL).
	MaxKeysPerScope int

	// Now returns the current time; nil means time.Now. Tests inject a controllable
	// clock. The store measures ages and leases with [time.Time.Sub] against the time
	// it read when it was created, so a clock whose readings carry a monotonic clock
	// reading (as time.Now's do) is immune to changes of the wall clock. A clock that
	// goes backwards is safe: a key whose claim time lies in the future is simply young,
	// and is never deleted early.
	Now func() time.Time
}

// Store is an in-memory [idempotency.KeyIndex]. It also implements
// [idempotency.Sweeper] and [idempotency.CapacityReporter]. Create it with [New]; it
// is safe for concurrent use, starts no goroutine and needs no Close.
type Store struct {
	ttl   int64 // nanoseconds
	limit int64 // keys per scope; 0 means no bound
	now   func() time.Time
	base  time.Time // the clock's reading at New; the store keeps times as nanoseconds since base
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
	shardBits = 8
	numShards = 1 << shardBits

	// popsPerClaim is how many of the oldest entries of its shard a Claim examines for
	// expiry. More than one, so that expired keys drain faster than claims add keys.
	popsPerClaim = 4

	// maxFieldLen bounds the scope and task id lengths, which entries record in 32 bits.
	maxFieldLen = math.MaxUint32 - idempotency.MaxKeyLength - 1
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
	if s.now == nil {
		s.now = time.Now
	}
	s.base = s.now()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.id = uint64(i)
		sh.keys = make(map[string]*entry)
	}
	return s
}

// entry is one held key. Its token is zero once it has left its shard's map (released,
// expired or purged); the shard's FIFO may still point to it until it is popped.
type entry struct {
	// text is key + "\x00" + scope + messageID in one allocation. The map key is
	// text[:keyLen]; keys cannot contain a NUL byte, so the first NUL ends the key.
	text string
	// bound is the bound task id followed by the reply JSON, or "" while pending
	// (a binding is never empty).
	bound     string
	claimedAt int64 // nanoseconds since Store.base
	leaseEnd  int64 // nanoseconds since Store.base; meaningless once bound
	token     idempotency.Token
	keyLen    uint32
	taskLen   uint32 // length of the task id at the start of bound
}

func (e *entry) mapKey() string    { return e.text[:e.keyLen] }
func (e *entry) messageID() string { return e.text[e.keyLen:] }
func (e *entry) taskID() string    { return e.bound[:e.taskLen] }
func (e *entry) reply() string     { return e.bound[e.taskLen:] }

func (e *entry) scope() string {
	k := e.mapKey()
	return k[strings.IndexByte(k, 0)+1:]
}

// shard is one independently locked part of the store.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte // keep shards on separate cache lines
}

type shardState struct {
	mu   sync.Mutex
	keys map[string]*entry
	// fifo holds the shard's entries in the order they were claimed, from fifo[head]
	// on. With a monotonic clock that is the order of claim times, so the expired
	// entries are at the head; disordered records that the clock went backwards.
	fifo       []*entry
	head       int
	last       int64 // latest claim time pushed to fifo
	disordered bool
	id         uint64 // the shard's index, the low bits of its tokens
	seq        uint64 // tokens issued by this shard
}

// Claim implements [idempotency.KeyIndex.Claim].
func (s *Store) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	switch {
	case messageID == "":
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w: empty message id", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w", err)
	}
	sh := s.shard(k)
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, fmt.Errorf("memstore: claim: %w", err)
		}
		c, full := s.claim(sh, k, scope, messageID, lease)
		if !full {
			return c, nil
		}
		if retried {
			return idempotency.Claim{}, fmt.Errorf("memstore: claim: scope holds %d keys: %w", s.limit, idempotency.ErrFull)
		}
		s.dropExpired()
	}
}

// claim is Claim under the shard's lock. It reports full, and changes nothing, when
// the key is absent and its scope has no room.
func (s *Store) claim(sh *shard, k []byte, scope, messageID string, lease time.Duration) (c idempotency.Claim, full bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	// Read the clock under the lock, so that the shard's FIFO is in claim-time order.
	now := s.clock()
	old := sh.keys[string(k)]
	if old != nil && !s.expired(old, now) {
		switch {
		case old.messageID() != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, false
		case old.bound == "" && now >= old.leaseEnd:
			// The owner's lease ended: take the claim over, keeping its claim time.
			old.token = sh.nextToken()
			old.leaseEnd = addSat(now, lease)
			return idempotency.Claim{Status: idempotency.Claimed, Token: old.token}, false
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: s.record(old)}, false
	}
	// An expired entry hands its place in the scope's count to its successor.
	if old == nil && !s.reserve(scope) {
		return idempotency.Claim{}, true
	}
	e := &entry{
		text:      string(append(k, messageID...)),
		claimedAt: now,
		leaseEnd:  addSat(now, lease),
		token:     sh.nextToken(),
		keyLen:    uint32(len(k)),
	}
	if old != nil {
		old.token = 0
	}
	sh.keys[e.mapKey()] = e
	sh.push(e)
	s.expireHeads(sh, now, popsPerClaim)
	sh.tidy()
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, false
}

// Bind implements [idempotency.KeyIndex.Bind].
func (s *Store) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	switch {
	case token == 0:
		return fmt.Errorf("memstore: bind: %w: zero token", idempotency.ErrInvalidArgument)
	case b.TaskID == "" && len(b.Reply) == 0:
		return fmt.Errorf("memstore: bind: %w: empty binding", idempotency.ErrInvalidArgument)
	case uint64(len(b.TaskID)) > maxFieldLen:
		return fmt.Errorf("memstore: bind: %w: task id too long", idempotency.ErrInvalidArgument)
	}
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return fmt.Errorf("memstore: bind: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: bind: %w", err)
	}
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[string(k)]
	if e == nil || e.token != token || s.expired(e, s.clock()) {
		return fmt.Errorf("memstore: bind: %w", idempotency.ErrNotOwner)
	}
	switch {
	case e.bound == "":
	case e.taskID() == b.TaskID && e.reply() == string(b.Reply):
		return nil
	case e.taskID() == b.TaskID && e.reply() == "" && b.TaskID != "":
		// A task binding gains the agent's Message reply.
	default:
		return fmt.Errorf("memstore: bind: %w", idempotency.ErrAlreadyBound)
	}
	e.bound = b.TaskID + string(b.Reply)
	e.taskLen = uint32(len(b.TaskID))
	return nil
}

// Release implements [idempotency.KeyIndex.Release].
func (s *Store) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if token == 0 {
		return fmt.Errorf("memstore: release: %w: zero token", idempotency.ErrInvalidArgument)
	}
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return fmt.Errorf("memstore: release: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: release: %w", err)
	}
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[string(k)]
	switch {
	case e == nil || s.expired(e, s.clock()):
		return nil
	case e.token != token:
		return fmt.Errorf("memstore: release: %w", idempotency.ErrNotOwner)
	case e.bound != "":
		return nil
	}
	s.remove(sh, e)
	sh.tidy()
	return nil
}

// Lookup implements [idempotency.KeyIndex.Lookup].
func (s *Store) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	var buf [keyBufLen]byte
	k, err := appendMapKey(buf[:0], scope, key)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("memstore: lookup: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("memstore: lookup: %w", err)
	}
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[string(k)]
	if e == nil || s.expired(e, s.clock()) {
		return idempotency.Record{}, false, nil
	}
	return s.record(e), true, nil
}

// Capacity implements [idempotency.CapacityReporter]. Held counts the keys of scope
// that are pending or bound, including expired keys not yet deleted.
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

// keyBufLen is the size of the stack buffer that holds a map key: enough for the
// longest key and a short scope.
const keyBufLen = idempotency.MaxKeyLength + 1 + 64

// appendMapKey appends the map key of (scope, key) to b, after checking the key.
func appendMapKey(b []byte, scope, key string) ([]byte, error) {
	if err := idempotency.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("%w: %w", idempotency.ErrInvalidArgument, err)
	}
	if uint64(len(scope)) > maxFieldLen {
		return nil, fmt.Errorf("%w: scope too long", idempotency.ErrInvalidArgument)
	}
	b = append(b, key...)
	b = append(b, 0)
	return append(b, scope...), nil
}

func (s *Store) shard(k []byte) *shard {
	return &s.shards[maphash.Bytes(s.seed, k)&(numShards-1)]
}

// clock returns the current time in nanoseconds since s.base.
func (s *Store) clock() int64 { return int64(s.now().Sub(s.base)) }

// time converts nanoseconds since s.base to a time.
func (s *Store) time(n int64) time.Time { return s.base.Add(time.Duration(n)).Round(0) }

// expired reports whether e is past its time to live at now.
func (s *Store) expired(e *entry, now int64) bool {
	return e.claimedAt <= now-s.ttl && now-s.ttl <= now // the second test guards overflow
}

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

// remove deletes e, which is in sh's map, and gives its place in the scope back. The
// caller holds sh.mu.
func (s *Store) remove(sh *shard, e *entry) {
	delete(sh.keys, e.mapKey())
	e.token = 0
	s.unreserve(e.scope())
}

// expireHeads pops up to n entries from the head of sh's FIFO that are deleted or
// expired at now, deleting the expired ones, and stops at the first live one. n < 0
// means no bound. The caller holds sh.mu.
func (s *Store) expireHeads(sh *shard, now int64, n int) {
	for ; n != 0 && sh.head < len(sh.fifo); n-- {
		e := sh.fifo[sh.head]
		if e.token != 0 {
			if !s.expired(e, now) {
				break
			}
			s.remove(sh, e)
		}
		sh.fifo[sh.head] = nil
		sh.head++
	}
}

// dropExpired deletes the expired keys of every shard.
func (s *Store) dropExpired() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		now := s.clock()
		s.expireHeads(sh, now, -1)
		if sh.disordered {
			// Expired entries may hide behind younger ones: scan, then restore order.
			for _, e := range sh.keys {
				if s.expired(e, now) {
					s.remove(sh, e)
				}
			}
			sh.rebuild()
		}
		sh.tidy()
		sh.mu.Unlock()
	}
}

func (sh *shard) nextToken() idempotency.Token {
	sh.seq++
	return idempotency.Token(sh.seq<<shardBits | sh.id)
}

// push appends e to the FIFO.
func (sh *shard) push(e *entry) {
	if e.claimedAt < sh.last {
		sh.disordered = true
	}
	sh.last = max(sh.last, e.claimedAt)
	sh.fifo = append(sh.fifo, e)
}

// tidy reclaims FIFO space: the popped prefix once it is half the slice, and deleted
// entries once they outnumber live ones. Both are amortized O(1) per FIFO entry.
func (sh *shard) tidy() {
	switch n := len(sh.fifo) - sh.head; {
	case n > 2*len(sh.keys)+64:
		sh.compact()
	case sh.head > 64 && 2*sh.head >= len(sh.fifo):
		copy(sh.fifo, sh.fifo[sh.head:])
		clear(sh.fifo[n:])
		sh.fifo, sh.head = sh.fifo[:n], 0
	}
}

// compact removes deleted entries from the FIFO, keeping the order of the others.
func (sh *shard) compact() {
	live := sh.fifo[:0]
	for _, e := range sh.fifo[sh.head:] {
		if e.token != 0 {
			live = append(live, e)
		}
	}
	clear(sh.fifo[len(live):])
	sh.fifo, sh.head = live, 0
}

// rebuild refills the FIFO with the live entries in claim-time order.
func (sh *shard) rebuild() {
	clear(sh.fifo)
	sh.fifo, sh.head = sh.fifo[:0], 0
	for _, e := range sh.keys {
		sh.fifo = append(sh.fifo, e)
	}
	slices.SortFunc(sh.fifo, func(a, b *entry) int { return cmp.Compare(a.claimedAt, b.claimedAt) })
	sh.disordered = false
	if n := len(sh.fifo); n > 0 {
		sh.last = sh.fifo[n-1].claimedAt
	}
}

// addSat returns now+d, saturated at the largest time.
func addSat(now int64, d time.Duration) int64 {
	if t := now + int64(d); t >= now {
		return t
	}
	return math.MaxInt64
}
