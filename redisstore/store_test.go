package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/internal/testkit/storetest"
	"github.com/a2akit/idempotency/redisstore"
	"github.com/a2akit/idempotency/redisstore/redistest"
)

const lease = time.Minute

func key(i int) string { return fmt.Sprintf("test-key-%08d", i) }

// pair returns two Stores on one prefix, each on a client of its own, as two processes
// have, with opts (Prefix set).
func pair(t *testing.T, opts redisstore.Options) (a, b *redisstore.Store, url string) {
	t.Helper()
	url = redistest.URL(t)
	opts.Prefix = redistest.Prefix(t, url)
	a, err := redisstore.New(redistest.Client(t, url), opts)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = redisstore.New(redistest.Client(t, url), opts); err != nil {
		t.Fatal(err)
	}
	return a, b, url
}

func mustClaim(t *testing.T, s idempotency.KeyIndex, scope, k, msg string, d time.Duration, want idempotency.ClaimStatus) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), scope, k, msg, d)
	if err != nil {
		t.Fatalf("Claim(%q, %q): %v", k, msg, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q, %q) = %v, want %v", k, msg, c.Status, want)
	}
	return c
}

// TestExtend: storetest.Extend on two clients with a controllable clock; and an
// extension past the key's TTL is refused.
func TestExtend(t *testing.T) {
	clk := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	a, b, _ := pair(t, redisstore.Options{Now: clk.Now})
	storetest.Extend(t, a, b, clk, lease)

	c := mustClaim(t, a, "", key(4), "m1", lease, idempotency.Claimed)
	clk.Advance(24 * time.Hour)
	if err := a.Extend(context.Background(), "", key(4), c.Token, 48*time.Hour); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Extend(past the TTL) = %v, want ErrNotOwner", err)
	}
}

// TestExtendByServerClock: without Options.Now, an extension is judged and counted by
// the Redis server's clock (storetest.ExtendByServerClock).
func TestExtendByServerClock(t *testing.T) {
	a, b, _ := pair(t, redisstore.Options{})
	storetest.ExtendByServerClock(t, a, b, 600*time.Millisecond)
}

// TestExtendRacingTakeover: an owner's extension and a takeover sent at the moment the
// lease ends, through two clients, never both win, over many keys.
func TestExtendRacingTakeover(t *testing.T) {
	clk := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	a, b, _ := pair(t, redisstore.Options{Now: clk.Now})
	ctx := context.Background()
	const n = 200
	tokens := make([]idempotency.Token, n)
	for i := range n {
		tokens[i] = mustClaim(t, a, "", key(i), "m1", lease, idempotency.Claimed).Token
	}
	clk.Advance(lease - time.Microsecond)
	// Half of the races run before the lease end, half at it: either the extension
	// wins (and the claim reports the running lease) or the takeover does (and the
	// extension is fenced out).
	var extended, tookOver int
	for i := range n {
		if i == n/2 {
			clk.Advance(time.Microsecond)
		}
		var wg sync.WaitGroup
		var extErr error
		var c idempotency.Claim
		var claimErr error
		wg.Go(func() { extErr = a.Extend(ctx, "", key(i), tokens[i], lease) })
		wg.Go(func() { c, claimErr = b.Claim(ctx, "", key(i), "m1", lease) })
		wg.Wait()
		if claimErr != nil {
			t.Fatalf("Claim: %v", claimErr)
		}
		switch {
		case extErr == nil && c.Status == idempotency.HeldBySameMessage:
			extended++
		case errors.Is(extErr, idempotency.ErrNotOwner) && c.Status == idempotency.Claimed:
			tookOver++
		default:
			t.Fatalf("key %d: Extend = %v and Claim = %v: want exactly one to win", i, extErr, c.Status)
		}
	}
	if extended < n/2 || tookOver == 0 {
		t.Errorf("extended %d, taken over %d of %d; want every extension before the lease end to win, and takeovers at it", extended, tookOver, n)
	}
}

// TestRedisExpiry: Redis deletes a key, and its place in the scope's count, at the end
// of its time to live, counted from the first claim; a takeover, a bind or an
// extension does not move it.
func TestRedisExpiry(t *testing.T) {
	const ttl = 2 * time.Second
	a, _, url := pair(t, redisstore.Options{TTL: ttl, MaxKeysPerScope: 10})
	rdb := redistest.Client(t, url)
	ctx := context.Background()
	c := mustClaim(t, a, "tenant", key(1), "m1", 100*time.Millisecond, idempotency.Claimed)
	names := keysOf(t, rdb, a)
	if len(names) != 2 {
		t.Fatalf("after one claim the server holds %q; want the key's record and the scope's set", names)
	}
	for _, n := range names {
		if !strings.Contains(n, "{s"+fmt.Sprintf("%x", "tenant")+"}") {
			t.Errorf("name %q lacks the scope's hash tag", n)
		}
	}
	time.Sleep(200 * time.Millisecond)
	c = mustClaim(t, a, "tenant", key(1), "m1", time.Minute, idempotency.Claimed) // takeover
	if err := a.Extend(ctx, "tenant", key(1), c.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.Bind(ctx, "tenant", key(1), c.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if d := rdb.PTTL(ctx, n).Val(); d <= 0 || d > ttl-150*time.Millisecond {
			t.Errorf("PTTL(%q) = %v after a takeover, a bind and an extension; want what is left of %v from the first claim", n, d, ttl)
		}
	}
	if held := capacity(t, a, "tenant"); held != 1 {
		t.Errorf("Capacity.Held = %d, want 1", held)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if names := keysOf(t, rdb, a); len(names) != 0 {
		t.Errorf("past the TTL the server still holds %q", names)
	}
	if held := capacity(t, a, "tenant"); held != 0 {
		t.Errorf("Capacity.Held = %d past the TTL, want 0", held)
	}
	mustClaim(t, a, "tenant", key(1), "m1", time.Minute, idempotency.Claimed)
}

// TestReleaseDeletes: a release deletes the key's record and its place in the count,
// and a scope that holds no key leaves nothing behind.
func TestReleaseDeletes(t *testing.T) {
	a, _, url := pair(t, redisstore.Options{MaxKeysPerScope: 10})
	rdb := redistest.Client(t, url)
	c := mustClaim(t, a, "", key(1), "m1", lease, idempotency.Claimed)
	if err := a.Release(context.Background(), "", key(1), c.Token); err != nil {
		t.Fatal(err)
	}
	if names := keysOf(t, rdb, a); len(names) != 0 {
		t.Errorf("after the release the server holds %q", names)
	}
}

// TestNoStoreReadsAnotherPrefix: stores on two prefixes of one server are independent.
func TestNoStoreReadsAnotherPrefix(t *testing.T) {
	a, _, _ := pair(t, redisstore.Options{})
	b, _, _ := pair(t, redisstore.Options{})
	mustClaim(t, a, "", key(1), "m1", lease, idempotency.Claimed)
	mustClaim(t, b, "", key(1), "m2", lease, idempotency.Claimed)
}

// TestOptions: bad options are refused by New.
func TestOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for name, opts := range map[string]redisstore.Options{
		"brace in prefix":  {Prefix: "app{x}:"},
		"long prefix":      {Prefix: strings.Repeat("p", 129)},
		"TTL below 1ms":    {TTL: time.Microsecond},
		"TTL of centuries": {TTL: 200 * 365 * 24 * time.Hour},
	} {
		if _, err := redisstore.New(rdb, opts); err == nil {
			t.Errorf("New(%s) = nil error", name)
		}
	}
	if _, err := redisstore.New(nil, redisstore.Options{}); err == nil {
		t.Error("New(nil client) = nil error")
	}
	if _, err := redisstore.New(rdb, redisstore.Options{}); err != nil {
		t.Errorf("New(zero options): %v", err)
	}
}

// TestOpenURL: OpenURL connects, owns its client, and fails clearly on a bad URL or
// an unreachable server without repeating the password.
func TestOpenURL(t *testing.T) {
	url := redistest.URL(t)
	ctx := context.Background()
	s, err := redisstore.OpenURL(ctx, url, redisstore.Options{Prefix: redistest.Prefix(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "", key(1), "m1", lease, idempotency.Claimed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup(ctx, "", key(1)); err == nil {
		t.Error("Lookup after Close succeeded; want the closed client's error")
	}
	// The prefix comes with the URL.
	prefix := redistest.Prefix(t, url)
	s, err = redisstore.OpenURL(ctx, url+"?prefix="+prefix, redisstore.Options{Prefix: "ignored:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Prefix() != prefix {
		t.Errorf("Prefix() = %q, want %q from the URL", s.Prefix(), prefix)
	}
	if _, err := s.Capacity(ctx, ""); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Capacity without a bound = %v, want errors.ErrUnsupported", err)
	}
	// So does the per-scope bound.
	b, err := redisstore.OpenURL(ctx, url+"?max-keys-per-scope=5&prefix="+redistest.Prefix(t, url), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c, err := b.Capacity(ctx, ""); err != nil || c.Limit != 5 {
		t.Errorf("Capacity with ?max-keys-per-scope=5 = %+v, %v; want Limit 5", c, err)
	}
	for _, u := range []string{"postgres://u:hunter2@db/x", "redis://:hunter2@127.0.0.1:1/0", "redis://:hunter2@127.0.0.1:6379/notanumber",
		"redis://:hunter2@127.0.0.1:6379/0?prefix=a{b}", "redis://:hunter2@127.0.0.1:6379/0?no_such_option=1",
		"redis://:hunter2@127.0.0.1:6379/0?max-keys-per-scope=many"} {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := redisstore.OpenURL(ctx, u, redisstore.Options{})
		cancel()
		if err == nil {
			t.Errorf("OpenURL(%q) = nil error", u)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("OpenURL(%q) = %v: the error repeats the password", u, err)
		}
	}
}

// TestReplyBytes: replies of every byte value, and of the longest length, are kept
// byte for byte.
func TestReplyBytes(t *testing.T) {
	a, b, _ := pair(t, redisstore.Options{})
	ctx := context.Background()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for i, r := range [][]byte{all, []byte(strings.Repeat("x", idempotency.MaxReplyLength))} {
		c := mustClaim(t, a, "\x00\xff}{", key(i), "m\x00{", lease, idempotency.Claimed)
		if err := a.Bind(ctx, "\x00\xff}{", key(i), c.Token, idempotency.Binding{TaskID: "t\x00}", Reply: r}); err != nil {
			t.Fatal(err)
		}
		got := mustClaim(t, b, "\x00\xff}{", key(i), "m\x00{", lease, idempotency.HeldBySameMessage).Record
		if string(got.Reply) != string(r) || got.TaskID != "t\x00}" || got.MessageID != "m\x00{" {
			t.Errorf("reply %d: got task %q, %d reply bytes; want them as bound", i, got.TaskID, len(got.Reply))
		}
	}
}

func keysOf(t *testing.T, rdb *redis.Client, s *redisstore.Store) []string {
	t.Helper()
	names, err := rdb.Keys(context.Background(), s.Prefix()+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func capacity(t *testing.T, s *redisstore.Store, scope string) int {
	t.Helper()
	c, err := s.Capacity(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	return c.Held
}

// counter is a go-redis hook that counts the commands a client sends, each one round
// trip (the store pipelines nothing), and keeps the name of the last.
type counter struct {
	n    atomic.Int64
	last atomic.Value
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		c.last.Store(cmd.Name())
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestRoundTrips: without a bound (the default), a keyed first send costs two round
// trips (the claim, one SET, and the bind), a retry of a bound key one, a retry of a
// pending key two (the SET finds it, a script judges its lease), and every other call
// one (Capacity none); with a bound, every call is one script. A server that lost
// the scripts (SCRIPT FLUSH, a restart, a failover) costs one more round trip once
// per script. It runs on a server of its own, whose scripts it may flush.
func TestRoundTrips(t *testing.T) {
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			rdb := privateServer(t)
			var cnt counter
			rdb.AddHook(&cnt)
			s, err := redisstore.New(rdb, redisstore.Options{MaxKeysPerScope: b.limit})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			trips := func(what string, want int64, f func()) {
				t.Helper()
				before := cnt.n.Load()
				f()
				if got := cnt.n.Load() - before; got != want {
					t.Errorf("%s: %d round trips, want %d", what, got, want)
				}
			}
			// Load every script (the first use of each may cost EVALSHA and EVAL).
			warm := mustClaim(t, s, "", key(0), "m", lease, idempotency.Claimed)
			mustClaim(t, s, "", key(0), "m", lease, idempotency.HeldBySameMessage)
			s.Extend(ctx, "", key(0), warm.Token, lease)
			s.Bind(ctx, "", key(0), warm.Token, idempotency.Binding{TaskID: "t"})
			s.Release(ctx, "", key(0), warm.Token)
			s.Lookup(ctx, "", key(0))
			s.Capacity(ctx, "")

			pendingRetry, capacity := int64(2), int64(0)
			if b.limit > 0 {
				pendingRetry, capacity = 1, 1
			}
			for i := 1; i <= 3; i++ {
				trips("keyed first send (claim, bind)", 2, func() {
					c := mustClaim(t, s, "", key(i), "m", lease, idempotency.Claimed)
					if want := map[bool]string{true: "evalsha", false: "set"}[b.limit > 0]; cnt.last.Load() != want {
						t.Errorf("a claim of an absent key sent %v; want %s", cnt.last.Load(), want)
					}
					if err := s.Bind(ctx, "", key(i), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
						t.Fatal(err)
					}
				})
				trips("retry of a bound key", 1, func() { mustClaim(t, s, "", key(i), "m", lease, idempotency.HeldBySameMessage) })
				trips("another message", 1, func() { mustClaim(t, s, "", key(i), "other", lease, idempotency.HeldByOtherMessage) })
			}
			trips("claim, retry while pending", 1+pendingRetry, func() {
				mustClaim(t, s, "", key(8), "m", lease, idempotency.Claimed)
				mustClaim(t, s, "", key(8), "m", lease, idempotency.HeldBySameMessage)
			})
			trips("claim, extend, release, lookup, capacity", 4+capacity, func() {
				c := mustClaim(t, s, "", key(9), "m", lease, idempotency.Claimed)
				if err := s.Extend(ctx, "", key(9), c.Token, lease); err != nil {
					t.Fatal(err)
				}
				if err := s.Release(ctx, "", key(9), c.Token); err != nil {
					t.Fatal(err)
				}
				s.Lookup(ctx, "", key(9))
				s.Capacity(ctx, "")
			})
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			trips("lookup after SCRIPT FLUSH (NOSCRIPT, then EVAL)", 2, func() { s.Lookup(ctx, "", key(1)) })
			trips("the next lookup", 1, func() { s.Lookup(ctx, "", key(1)) })
		})
	}
}

func TestDescribe(t *testing.T) {
	for in, want := range map[string]string{
		"redis://:hunter2@cache:6379/2?prefix=app:": "Redis cache:6379/2 (prefix app:)",
		"rediss://u:hunter2@cache":                  "Redis cache",
		"redis://%zz":                               "Redis (a URL that does not parse)",
	} {
		if got := redisstore.Describe(in); got != want {
			t.Errorf("Describe(%q) = %q, want %q", in, got, want)
		}
	}
}
