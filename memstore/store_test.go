package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/memstore"
)

// clocked returns a Store with opts on a clock that moves only when the test
// advances it, and the clock.
func clocked(opts memstore.Options) (*memstore.Store, *conformance.Clock) {
	clock := conformance.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.Now = clock.Now
	return memstore.New(opts), clock
}

// key returns a well-formed key that is distinct for each i.
func key(i int) string { return fmt.Sprintf("key-%016d", i) }

func mustClaim(t *testing.T, s *memstore.Store, scope, key, msg string, lease time.Duration) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), scope, key, msg, lease)
	if err != nil {
		t.Fatalf("Claim(%q, %q, %q): %v", scope, key, msg, err)
	}
	return c
}

func capacity(t *testing.T, s *memstore.Store, scope string) idempotency.Capacity {
	t.Helper()
	c, err := s.Capacity(context.Background(), scope)
	if err != nil {
		t.Fatalf("Capacity(%q): %v", scope, err)
	}
	return c
}

func TestDefaults(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{})
	if got := capacity(t, s, "").Limit; got != memstore.DefaultMaxKeysPerScope {
		t.Errorf("default Limit = %d, want %d", got, memstore.DefaultMaxKeysPerScope)
	}
	c := mustClaim(t, s, "", key(1), "m", time.Minute)
	clock.Advance(idempotency.DefaultKeyMaxAge - time.Nanosecond)
	if _, ok, _ := s.Lookup(ctx, "", key(1)); !ok {
		t.Fatal("key gone before the default TTL")
	}
	clock.Advance(time.Nanosecond)
	if _, ok, _ := s.Lookup(ctx, "", key(1)); ok {
		t.Fatal("key still held at the default TTL")
	}
	if err := s.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind after TTL: %v, want ErrNotOwner", err)
	}

	unbounded := memstore.New(memstore.Options{MaxKeysPerScope: -1})
	for i := range 10 {
		mustClaim(t, unbounded, "", key(i), "m", time.Minute)
	}
	if got := capacity(t, unbounded, ""); got != (idempotency.Capacity{Held: 10, Limit: 0}) {
		t.Errorf("unbounded Capacity = %+v, want Held 10, Limit 0", got)
	}
}

func TestRecordTimesFollowInjectedClock(t *testing.T) {
	s, clock := clocked(memstore.Options{})
	t0 := clock.Now()
	c := mustClaim(t, s, "", key(1), "m", time.Minute)
	clock.Advance(2 * time.Minute)
	// The lease ended: the same message takes the claim over, keeping the claim time.
	c2 := mustClaim(t, s, "", key(1), "m", time.Minute)
	if c2.Status != idempotency.Claimed || c2.Token == c.Token {
		t.Fatalf("takeover = %+v, want Claimed with a new token (old %d)", c2, c.Token)
	}
	rec, ok, err := s.Lookup(context.Background(), "", key(1))
	if err != nil || !ok {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	if !rec.ClaimedAt.Equal(t0) {
		t.Errorf("ClaimedAt = %v, want %v", rec.ClaimedAt, t0)
	}
	if want := t0.Add(3 * time.Minute); !rec.LeaseExpiresAt.Equal(want) {
		t.Errorf("LeaseExpiresAt = %v, want %v", rec.LeaseExpiresAt, want)
	}
}

// TestTokensUnique claims and releases keys that spread over many shards: each shard
// issues its own tokens, told apart by the shard's index in their low bits.
func TestTokensUnique(t *testing.T) {
	s := memstore.New(memstore.Options{})
	seen := make(map[idempotency.Token]bool)
	for i := range 5000 {
		c := mustClaim(t, s, "", key(i%100), fmt.Sprint("m", i), time.Minute)
		if c.Status != idempotency.Claimed {
			t.Fatalf("claim %d: %v", i, c.Status)
		}
		if c.Token == 0 || seen[c.Token] {
			t.Fatalf("claim %d: token %d is zero or repeated", i, c.Token)
		}
		seen[c.Token] = true
		if err := s.Release(context.Background(), "", key(i%100), c.Token); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCapacity(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{MaxKeysPerScope: 3})
	var tokens []idempotency.Token
	for i := range 3 {
		tokens = append(tokens, mustClaim(t, s, "a", key(i), "m", time.Minute).Token)
	}
	_, err := s.Claim(ctx, "a", key(3), "m", time.Minute)
	if !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("fourth claim: %v, want ErrFull", err)
	}
	if got := capacity(t, s, "a"); got != (idempotency.Capacity{Held: 3, Limit: 3}) {
		t.Errorf("Capacity = %+v, want 3 of 3", got)
	}
	// A full scope still answers retries of the keys it holds, and other scopes are
	// unaffected.
	if c := mustClaim(t, s, "a", key(0), "m", time.Minute); c.Status != idempotency.HeldBySameMessage {
		t.Errorf("retry in full scope: %v", c.Status)
	}
	if c := mustClaim(t, s, "b", key(3), "m", time.Minute); c.Status != idempotency.Claimed {
		t.Errorf("claim in other scope: %v", c.Status)
	}
	// Releasing frees a place.
	if err := s.Release(ctx, "a", key(0), tokens[0]); err != nil {
		t.Fatal(err)
	}
	if c := mustClaim(t, s, "a", key(3), "m", time.Minute); c.Status != idempotency.Claimed {
		t.Errorf("claim after release: %v", c.Status)
	}
	if got := capacity(t, s, "a").Held; got != 3 {
		t.Errorf("Held = %d, want 3", got)
	}
}

func TestCapacityDropsExpiredFirst(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{TTL: time.Hour, MaxKeysPerScope: 2})
	c := mustClaim(t, s, "", key(0), "m", time.Minute)
	if err := s.Bind(ctx, "", key(0), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Minute)
	mustClaim(t, s, "", key(1), "m", time.Hour)
	clock.Advance(30 * time.Minute) // key 0 expires; key 1 is pending with its lease running
	if c := mustClaim(t, s, "", key(2), "m", time.Minute); c.Status != idempotency.Claimed {
		t.Fatalf("claim in full scope with an expired key: %v", c.Status)
	}
	if _, ok, _ := s.Lookup(ctx, "", key(1)); !ok {
		t.Error("the pending key was dropped")
	}
	if got := capacity(t, s, "").Held; got != 2 {
		t.Errorf("Held = %d, want 2", got)
	}
}

func TestCapacityNeverEvictsHeldKeys(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{TTL: time.Hour, MaxKeysPerScope: 2})
	mustClaim(t, s, "", key(0), "m0", time.Second) // abandoned: its lease will end
	c := mustClaim(t, s, "", key(1), "m1", time.Second)
	if err := s.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if _, err := s.Claim(ctx, "", key(2), "m2", time.Minute); !errors.Is(err, idempotency.ErrFull) {
		t.Fatalf("claim in a full scope: %v, want ErrFull", err)
	}
	for i, msg := range []string{"m0", "m1"} {
		if _, ok, _ := s.Lookup(ctx, "", key(i)); !ok {
			t.Errorf("key %d was evicted", i)
		}
		if c := mustClaim(t, s, "", key(i), msg, time.Minute); c.Status == idempotency.HeldByOtherMessage {
			t.Errorf("key %d: %v", i, c.Status)
		}
	}
}

// TestCapacityExactUnderConcurrency races claims of distinct keys in one scope, and
// checks that exactly the limit succeed, and that claims and releases racing with them
// keep the count exact.
func TestCapacityExactUnderConcurrency(t *testing.T) {
	const limit, workers, perWorker = 100, 8, 50
	ctx := context.Background()
	s := memstore.New(memstore.Options{MaxKeysPerScope: limit})
	type result struct {
		claimed, full int
		err           error
	}
	results := make(chan result, workers)
	for w := range workers {
		go func() {
			var r result
			for i := range perWorker {
				c, err := s.Claim(ctx, "", key(w*perWorker+i), "m", time.Minute)
				switch {
				case errors.Is(err, idempotency.ErrFull):
					r.full++
				case err != nil:
					r.err = err
				case c.Status == idempotency.Claimed:
					r.claimed++
				}
			}
			results <- r
		}()
	}
	claimed, full := 0, 0
	for range workers {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		claimed, full = claimed+r.claimed, full+r.full
	}
	if claimed != limit || full != workers*perWorker-limit {
		t.Errorf("claimed %d, full %d; want %d, %d", claimed, full, limit, workers*perWorker-limit)
	}
	if got := capacity(t, s, "").Held; got != limit {
		t.Errorf("Held = %d, want %d", got, limit)
	}

	// Churn: each worker claims its own keys and releases every other one.
	const rounds = 200
	s = memstore.New(memstore.Options{MaxKeysPerScope: workers * rounds})
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range rounds {
				k := key(1_000_000 + w*rounds + i)
				c, err := s.Claim(ctx, "churn", k, "m", time.Minute)
				if err != nil {
					errs <- err
					return
				}
				if i%2 == 0 {
					if err := s.Release(ctx, "churn", k, c.Token); err != nil {
						errs <- err
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := capacity(t, s, "churn").Held, workers*rounds/2; got != want {
		t.Errorf("after churn Held = %d, want %d", got, want)
	}
}

func TestPurgeExpired(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{TTL: 24 * time.Hour})
	for i := range 25 {
		c := mustClaim(t, s, "", key(i), "m", time.Minute)
		if err := s.Bind(ctx, "", key(i), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	mustClaim(t, s, "", key(100), "m", 48*time.Hour) // pending, lease running: never purged
	mustClaim(t, s, "", key(101), "m", time.Minute)  // pending, lease ended: purged
	clock.Advance(50 * time.Minute)
	mustClaim(t, s, "", key(200), "m", time.Minute) // young
	clock.Advance(10 * time.Minute)

	policy := idempotency.RetentionPolicy{KeyMaxAge: 30 * time.Minute, BatchSize: 10, MaxBatches: 2}
	check := func(p idempotency.RetentionPolicy, want idempotency.PurgeReport, held int) {
		t.Helper()
		got, err := s.PurgeExpired(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PurgeExpired(%+v) = %+v, want %+v", p, got, want)
		}
		if c := capacity(t, s, "").Held; c != held {
			t.Errorf("Held = %d, want %d", c, held)
		}
	}
	check(idempotency.RetentionPolicy{KeyMaxAge: -1}, idempotency.PurgeReport{Complete: true}, 28)
	check(idempotency.RetentionPolicy{KeyMaxAge: 30 * time.Minute, TerminalTaskRetention: 2 * time.Hour},
		idempotency.PurgeReport{Complete: true}, 28)
	check(policy, idempotency.PurgeReport{KeysDeleted: 20, Batches: 2}, 8)
	policy.MaxBatches = 0
	check(policy, idempotency.PurgeReport{KeysDeleted: 6, Batches: 1, Complete: true}, 2)
	check(policy, idempotency.PurgeReport{Complete: true}, 2)

	if _, ok, _ := s.Lookup(ctx, "", key(100)); !ok {
		t.Error("purge deleted a pending claim whose lease is running")
	}
	if _, ok, _ := s.Lookup(ctx, "", key(200)); !ok {
		t.Error("purge deleted a young key")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.PurgeExpired(cancelled, idempotency.RetentionPolicy{}); !errors.Is(err, context.Canceled) {
		t.Errorf("PurgeExpired with a cancelled ctx: %v", err)
	}
}

func TestPurgeReportCompleteOnExactBatches(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{})
	for i := range 20 {
		c := mustClaim(t, s, "", key(i), "m", time.Minute)
		if err := s.Bind(ctx, "", key(i), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	got, err := s.PurgeExpired(ctx, idempotency.RetentionPolicy{KeyMaxAge: time.Minute, BatchSize: 10, MaxBatches: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := (idempotency.PurgeReport{KeysDeleted: 20, Batches: 2, Complete: true}); got != want {
		t.Errorf("PurgeExpired = %+v, want %+v", got, want)
	}
}

func TestPurgeDeletesKeysPastTTL(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{TTL: time.Hour})
	mustClaim(t, s, "", key(0), "m", time.Minute)
	clock.Advance(time.Hour)
	got, err := s.PurgeExpired(ctx, idempotency.RetentionPolicy{}) // 24 h: older than the TTL
	if err != nil {
		t.Fatal(err)
	}
	if got.KeysDeleted != 1 || capacity(t, s, "").Held != 0 {
		t.Errorf("PurgeExpired = %+v, Held %d; want the key past the TTL deleted", got, capacity(t, s, "").Held)
	}
}

// TestMaxBytes floods the store from distinct scopes, the way distinct tenants would:
// the store refuses new keys with ErrFull once MaxBytes is reached, never counts less
// than the keys' heap, and takes keys again once some are gone. Expired keys are
// dropped first.
func TestMaxBytes(t *testing.T) {
	const max = 64 << 10
	ctx := context.Background()
	s, clock := clocked(memstore.Options{MaxBytes: max, TTL: time.Hour})
	var tokens []idempotency.Token
	for i := 0; ; i++ {
		c, err := s.Claim(ctx, fmt.Sprintf("tenant-%d", i), key(i), "m", time.Minute)
		if errors.Is(err, idempotency.ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > max {
			t.Fatalf("%d keys claimed, and the store is not full", i)
		}
		tokens = append(tokens, c.Token)
	}
	const short = memstore.KeyOverhead + memstore.ScopeOverhead + 64 // what a short key in a scope of its own counts
	if got := s.Bytes(); got > max || got < max-short {
		t.Errorf("full store counts %d bytes, want at most %d and close to it", got, max)
	}
	if len(tokens) < max/short {
		t.Errorf("only %d short keys fit in %d bytes", len(tokens), max)
	}
	// A key already held is still answered; a Reply that does not fit is refused
	// without changing the key.
	if c := mustClaim(t, s, "tenant-0", key(0), "m", time.Minute); c.Status != idempotency.HeldBySameMessage {
		t.Errorf("retry in a full store: %v", c.Status)
	}
	err := s.Bind(ctx, "tenant-0", key(0), tokens[0], idempotency.Binding{TaskID: "t", Reply: make([]byte, 8<<10)})
	if !errors.Is(err, idempotency.ErrFull) {
		t.Errorf("Bind of a reply that does not fit: %v, want ErrFull", err)
	}
	if rec, _, _ := s.Lookup(ctx, "tenant-0", key(0)); !rec.Pending() {
		t.Errorf("the refused Bind changed the key: %+v", rec)
	}
	// Releasing gives room back.
	if err := s.Release(ctx, "tenant-0", key(0), tokens[0]); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "other", key(0), "m", time.Minute)
	// Once the keys expire, a claim in the full store drops them and succeeds.
	clock.Advance(time.Hour)
	if c := mustClaim(t, s, "late", key(1), "m", time.Minute); c.Status != idempotency.Claimed {
		t.Errorf("claim after the keys expired: %v", c.Status)
	}
	if got := s.Bytes(); got > short {
		t.Errorf("after expiry the store counts %d bytes for one key", got)
	}
}

// TestFieldBounds: values past the bounds of idempotency.CheckLengths are refused
// before anything is stored.
func TestFieldBounds(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	long := func(n int) string { return string(make([]byte, n+1)) }
	if _, err := s.Claim(ctx, long(idempotency.MaxScopeLength), key(0), "m", time.Minute); !errors.Is(err, idempotency.ErrInvalidArgument) {
		t.Errorf("Claim(long scope): %v, want ErrInvalidArgument", err)
	}
	if _, err := s.Claim(ctx, "", key(0), long(idempotency.MaxMessageIDLength), time.Minute); !errors.Is(err, idempotency.ErrInvalidArgument) {
		t.Errorf("Claim(long message id): %v, want ErrInvalidArgument", err)
	}
	c := mustClaim(t, s, "", key(0), "m", time.Minute)
	for name, b := range map[string]idempotency.Binding{
		"task id": {TaskID: long(idempotency.MaxTaskIDLength)},
		"reply":   {TaskID: "t", Reply: []byte(long(idempotency.MaxReplyLength))},
	} {
		if err := s.Bind(ctx, "", key(0), c.Token, b); !errors.Is(err, idempotency.ErrInvalidArgument) {
			t.Errorf("Bind(long %s): %v, want ErrInvalidArgument", name, err)
		}
	}
	if got := s.Bytes(); got > memstore.KeyOverhead+memstore.ScopeOverhead+64 {
		t.Errorf("the store counts %d bytes for one short key", got)
	}
}

// TestMaxBytesExactUnderConcurrency races claims and releases in distinct and shared
// scopes against a small MaxBytes: the count never passes the bound, and it is back
// to zero once every key is gone.
func TestMaxBytesExactUnderConcurrency(t *testing.T) {
	const max, workers, rounds = 16 << 10, 8, 400
	ctx := context.Background()
	s := memstore.New(memstore.Options{MaxBytes: max})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				scope := fmt.Sprintf("tenant-%d", (w*rounds+i)%13)
				k := key(w*rounds + i)
				c, err := s.Claim(ctx, scope, k, "m", time.Minute)
				if errors.Is(err, idempotency.ErrFull) {
					continue
				}
				if err == nil && i%2 == 0 {
					err = s.Release(ctx, scope, k, c.Token)
				} else if err == nil {
					err = s.Bind(ctx, scope, k, c.Token, idempotency.Binding{TaskID: "t"})
					if errors.Is(err, idempotency.ErrFull) {
						err = s.Release(ctx, scope, k, c.Token)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				if n := s.Bytes(); n > max {
					errs <- fmt.Errorf("the store counts %d bytes, past %d", n, max)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := s.PurgeExpired(ctx, idempotency.RetentionPolicy{KeyMaxAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if n := s.Bytes(); n != 0 {
		t.Errorf("with every key gone the store counts %d bytes", n)
	}
}

// TestExtend: the owner moves the lease end to now+lease; a lease that ended (taken
// over or not), a bind or a release fence the token out.
func TestExtend(t *testing.T) {
	ctx := context.Background()
	s, clock := clocked(memstore.Options{})
	notOwner := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, idempotency.ErrNotOwner) {
			t.Errorf("%s = %v, want ErrNotOwner", what, err)
		}
	}
	first := mustClaim(t, s, "", key(1), "m1", time.Minute)
	claimedAt := clock.Now()
	clock.Advance(30 * time.Second)
	if err := s.Extend(ctx, "", key(1), first.Token, 3*time.Minute); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	rec, _, _ := s.Lookup(ctx, "", key(1))
	if !rec.LeaseExpiresAt.Equal(clock.Now().Add(3*time.Minute)) || !rec.ClaimedAt.Equal(claimedAt) {
		t.Fatalf("after Extend: %+v; want lease end %v, claim time %v", rec, clock.Now().Add(3*time.Minute), claimedAt)
	}
	clock.Advance(3*time.Minute - time.Nanosecond)
	if c := mustClaim(t, s, "", key(1), "m1", time.Minute); c.Status != idempotency.HeldBySameMessage {
		t.Fatalf("Claim before the extended lease ended = %v", c.Status)
	}
	notOwner("Extend(other token)", s.Extend(ctx, "", key(1), first.Token+1, time.Minute))
	clock.Advance(time.Nanosecond)
	notOwner("Extend(lease ended, nobody took over)", s.Extend(ctx, "", key(1), first.Token, time.Minute))
	second := mustClaim(t, s, "", key(1), "m1", time.Minute)
	if second.Status != idempotency.Claimed {
		t.Fatalf("takeover = %v", second.Status)
	}
	notOwner("Extend(after takeover)", s.Extend(ctx, "", key(1), first.Token, time.Minute))
	if err := s.Bind(ctx, "", key(1), second.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	notOwner("Extend(bound)", s.Extend(ctx, "", key(1), second.Token, time.Minute))
	third := mustClaim(t, s, "", key(2), "m1", time.Minute)
	if err := s.Release(ctx, "", key(2), third.Token); err != nil {
		t.Fatal(err)
	}
	notOwner("Extend(released)", s.Extend(ctx, "", key(2), third.Token, time.Minute))
	if err := s.Extend(ctx, "", key(2), 0, time.Minute); !errors.Is(err, idempotency.ErrInvalidArgument) {
		t.Errorf("Extend(zero token) = %v", err)
	}
	if err := s.Extend(ctx, "", key(2), third.Token, 0); !errors.Is(err, idempotency.ErrInvalidArgument) {
		t.Errorf("Extend(zero lease) = %v", err)
	}
}
