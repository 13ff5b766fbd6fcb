package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"testing"
	"time"
	"unsafe"

	"github.com/a2akit/idempotency"
)

// keysInShard returns n well-formed keys of scope that s puts in shard i.
func keysInShard(s *Store, scope string, i, n int) []string {
	var keys []string
	var b []byte
	for j := 0; len(keys) < n; j++ {
		b = fmt.Appendf(b[:0], "shard-key-%012d", j)
		k := len(b)
		b = append(b, 0)
		b = append(b, scope...)
		if s.shard(maphash.Bytes(s.seed, b)) == &s.shards[i] {
			keys = append(keys, string(b[:k]))
		}
	}
	return keys
}

type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { return c.t }

func (sh *shard) size() (keys, fifo int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.n, len(sh.fifo) - sh.head
}

func claim(t *testing.T, s *Store, scope, key, msg string) idempotency.Token {
	t.Helper()
	c, err := s.Claim(context.Background(), scope, key, msg, time.Minute)
	if err != nil || c.Status != idempotency.Claimed {
		t.Fatalf("Claim(%q): %+v, %v", key, c, err)
	}
	return c.Token
}

// TestClaimsFreeExpiredEntries checks that claims delete the expired entries of their
// shard, without a sweep: each claim pops up to popsPerClaim of them.
func TestClaimsFreeExpiredEntries(t *testing.T) {
	clock := &stepClock{t: time.Unix(0, 0)}
	s := New(Options{TTL: time.Hour, Now: clock.Now})
	keys := keysInShard(s, "", 0, 50)
	for _, k := range keys[:40] {
		claim(t, s, "", k, "m")
	}
	clock.t = clock.t.Add(time.Hour)
	for _, k := range keys[40:] {
		claim(t, s, "", k, "m")
	}
	if n, f := s.shards[0].size(); n != 10 || f != 10 {
		t.Errorf("shard holds %d keys, FIFO %d entries; want 10, 10", n, f)
	}
	if c, _ := s.Capacity(context.Background(), ""); c.Held != 10 {
		t.Errorf("Held = %d, want 10", c.Held)
	}
}

// TestReleasedEntriesLeaveFIFO checks that claim-and-release churn behind a long-lived
// key does not grow the FIFO without bound.
func TestReleasedEntriesLeaveFIFO(t *testing.T) {
	s := New(Options{})
	keys := keysInShard(s, "", 3, 2)
	claim(t, s, "", keys[0], "m")
	for i := range 10_000 {
		tok := claim(t, s, "", keys[1], fmt.Sprint("m", i))
		if err := s.Release(context.Background(), "", keys[1], tok); err != nil {
			t.Fatal(err)
		}
	}
	if _, f := s.shards[3].size(); f > 2*1+64+1 {
		t.Errorf("FIFO holds %d entries for 1 live key", f)
	}
}

// TestClockGoingBackwards checks that a clock that goes backwards deletes nothing early,
// and that a full scope still finds expired keys that sit behind younger ones.
func TestClockGoingBackwards(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1_000_000, 0)
	clock := &stepClock{t: t0.Add(5 * time.Hour)}
	s := New(Options{TTL: time.Hour, MaxKeysPerScope: 2, Now: clock.Now})
	keys := keysInShard(s, "", 7, 3)
	claim(t, s, "", keys[0], "m") // claimed at t0+5h
	clock.t = t0
	claim(t, s, "", keys[1], "m") // claimed at t0, behind keys[0] in the FIFO
	clock.t = t0.Add(90 * time.Minute)
	if _, ok, _ := s.Lookup(ctx, "", keys[0]); !ok {
		t.Fatal("a key claimed in the clock's future was dropped")
	}
	if _, ok, _ := s.Lookup(ctx, "", keys[1]); ok {
		t.Fatal("a key past its TTL is still held")
	}
	claim(t, s, "", keys[2], "m") // the scope is full until keys[1] is dropped
	if _, ok, _ := s.Lookup(ctx, "", keys[0]); !ok {
		t.Error("a key claimed in the clock's future was dropped")
	}
	if n, f := s.shards[7].size(); n != 2 || f != 2 {
		t.Errorf("shard holds %d keys, FIFO %d entries; want 2, 2", n, f)
	}
}

// TestScopeCountRetired checks that a scope whose keys are all gone leaves nothing
// behind, and that the scope can be used again.
func TestScopeCountRetired(t *testing.T) {
	ctx := context.Background()
	s := New(Options{})
	for round := range 2 {
		tok := claim(t, s, "tenant", "0123456789abcdef", fmt.Sprint("m", round))
		if err := s.Release(ctx, "tenant", "0123456789abcdef", tok); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.scopes.Load("tenant"); ok {
			t.Fatalf("round %d: scope count kept after its last key was released", round)
		}
		if n := s.Bytes(); n != 0 {
			t.Fatalf("round %d: the empty store counts %d bytes", round, n)
		}
	}
}

func TestEntrySize(t *testing.T) {
	// Entries are allocated in the 64-byte size class; a larger entry costs 16 bytes
	// more per key.
	if got := unsafe.Sizeof(entry{}); got > 64 {
		t.Errorf("entry is %d bytes, want at most 64", got)
	}
}

// TestShrinkAfterExpiry checks that a shard whose keys expired rebuilds its map and
// FIFO, which Go would otherwise keep at their largest size.
func TestShrinkAfterExpiry(t *testing.T) {
	clock := &stepClock{t: time.Unix(0, 0)}
	s := New(Options{TTL: time.Hour, Now: clock.Now})
	keys := keysInShard(s, "", 5, 4*shrinkMin)
	for _, k := range keys[:3*shrinkMin] {
		claim(t, s, "", k, "m")
	}
	sh := &s.shards[5]
	fifoCap := cap(sh.fifo)
	clock.t = clock.t.Add(time.Hour)
	for _, k := range keys[3*shrinkMin:] {
		claim(t, s, "", k, "m")
	}
	if n, f := sh.size(); n != shrinkMin || f != shrinkMin {
		t.Fatalf("shard holds %d keys, FIFO %d entries; want %d, %d", n, f, shrinkMin, shrinkMin)
	}
	if sh.peak >= 3*shrinkMin {
		t.Errorf("map not rebuilt: peak %d entries, holds %d", sh.peak, sh.n)
	}
	if cap(sh.fifo) >= fifoCap {
		t.Errorf("FIFO not shrunk: capacity %d, was %d, holds %d", cap(sh.fifo), fifoCap, len(sh.fifo)-sh.head)
	}
}

// TestHashCollisions checks the spill map, which holds entries whose 64-bit hash
// another entry already has; real collisions are too rare to meet in a test.
func TestHashCollisions(t *testing.T) {
	var sh shard
	sh.keys = make(map[uint64]*entry)
	const h = 42
	mk := func(key string) *entry {
		k, _ := appendMapKey(nil, "", key)
		return &entry{text: string(k) + "m", hash: h, token: 1, keyLen: uint32(len(k))}
	}
	find := func(key string) *entry {
		k, _ := appendMapKey(nil, "", key)
		return sh.get(h, k)
	}
	a, b, c := mk("aaaaaaaaaaaaaaaa"), mk("bbbbbbbbbbbbbbbb"), mk("cccccccccccccccc")
	for _, e := range []*entry{a, b, c} {
		sh.put(e)
	}
	for _, e := range []*entry{a, b, c} {
		if got := find(e.mapKey()[:16]); got != e {
			t.Fatalf("get(%q) = %v, want its entry", e.mapKey(), got)
		}
	}
	sh.del(a) // the entry in keys: b and c stay reachable through spill
	if find("aaaaaaaaaaaaaaaa") != nil || find("bbbbbbbbbbbbbbbb") != b || find("cccccccccccccccc") != c {
		t.Fatal("after deleting the first entry, lookups are wrong")
	}
	sh.put(a) // back in keys, since its slot there is free
	sh.del(c)
	sh.del(b)
	if find("aaaaaaaaaaaaaaaa") != a || find("bbbbbbbbbbbbbbbb") != nil || find("cccccccccccccccc") != nil {
		t.Fatal("after deleting the spilled entries, lookups are wrong")
	}
	if sh.spill != nil || sh.n != 1 {
		t.Errorf("spill = %v, n = %d; want nil, 1", sh.spill, sh.n)
	}
	var seen int
	sh.each(func(*entry) bool { seen++; return true })
	if seen != 1 {
		t.Errorf("each visited %d entries, want 1", seen)
	}
}
