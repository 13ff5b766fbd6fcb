package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/redisstore/redistest"
)

// TestClaimSentTwice: a claim script that reaches the server twice (the client sent it
// again after its answer was lost) is claimed both times with the one token, and
// counted once: the retry neither reports the key held nor takes it over. (The SET of
// a store without a bound, sent twice, is TestSetSentTwice.)
func TestClaimSentTwice(t *testing.T) {
	url := redistest.URL(t)
	s, err := New(redistest.Client(t, url), Options{Prefix: redistest.Prefix(t, url), MaxKeysPerScope: 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const k = "test-key-sent-twice"
	set := s.setName("")
	tok := idempotency.RandomToken()
	f := rec{m: "m1", k: formatToken(tok), relative: true, l: micros(time.Minute), e: s.ttl}
	for i := range 2 {
		v, err := s.run(ctx, "claim", claimScript, []string{set + k, set}, string(f.pack(nil)), f.m, f.k, micros(time.Minute), s.ttl, k, s.limit)
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := v.([]any); len(a) != 1 || a[0] != int64(1) {
			t.Fatalf("send %d: %v; want {1} (claimed)", i+1, v)
		}
	}
	if c, _ := s.Capacity(ctx, ""); c.Held != 1 {
		t.Errorf("Capacity.Held = %d, want 1", c.Held)
	}
	if err := s.Bind(ctx, "", k, tok, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Errorf("Bind with the token: %v", err)
	}
}

// TestSetNames: names are unambiguous: the scope is hex inside the hash tag, so that
// scopes with braces, NULs or separators stay apart and keep their tag whole.
func TestSetNames(t *testing.T) {
	s, err := New(redistest.Client(t, "redis://127.0.0.1:1"), Options{Prefix: "p:"})
	if err != nil {
		t.Fatal(err)
	}
	for scope, want := range map[string]string{
		"":     "p:{s}",
		"a}{b": "p:{s617d7b62}",
		"\x00": "p:{s00}",
	} {
		if got := s.setName(scope); got != want {
			t.Errorf("setName(%q) = %q, want %q", scope, got, want)
		}
	}
	long := string(make([]byte, idempotency.MaxScopeLength))
	if got := s.setName(long); len(got) != len("p:{s}")+2*idempotency.MaxScopeLength {
		t.Errorf("setName of a %d-byte scope is %d bytes", len(long), len(got))
	}
}

// TestSetSentTwice: the SET of a claim on a store without a bound that reached the
// server, its answer lost and the client sending it again, finds its own record and
// is claimed with its token: the retry neither reports the key held nor takes it over.
func TestSetSentTwice(t *testing.T) {
	url := redistest.URL(t)
	for _, now := range []func() time.Time{nil, func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }} {
		s, err := New(redistest.Client(t, url), Options{Prefix: redistest.Prefix(t, url), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		const k = "test-key-set-sent-twice"
		tok := idempotency.RandomToken()
		f := rec{m: "m1", k: formatToken(tok), relative: true, l: micros(time.Minute), e: s.ttl}
		if now != nil {
			n := now().UnixMicro()
			f.relative, f.c, f.l, f.e = false, n, n+f.l, n+1000*s.ttl
		}
		packed := string(f.pack(nil))
		for i := range 2 {
			c, decided, err := s.claimAbsent(ctx, s.setName("")+k, packed, f, tok)
			if err != nil || !decided || c.Status != idempotency.Claimed || c.Token != tok {
				t.Fatalf("clock %v, send %d: %+v, decided %v, %v; want claimed with the token", now != nil, i+1, c, decided, err)
			}
		}
		if err := s.Bind(ctx, "", k, tok, idempotency.Binding{TaskID: "t1"}); err != nil {
			t.Errorf("Bind with the token: %v", err)
		}
	}
}

// TestServerClockTimes: on the server's clock a claim's times follow from the key's
// expiry: ClaimedAt is the millisecond after the SET (never before it), the lease ends
// a lease after it and the time to live a TTL after it; a bind writes the record
// absolute with the same times, which the key's expiry, unmoved, still agrees with.
func TestServerClockTimes(t *testing.T) {
	url := redistest.URL(t)
	rdb := redistest.Client(t, url)
	s, err := New(rdb, Options{Prefix: redistest.Prefix(t, url), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const k = "test-key-server-clock-times"
	name := s.setName("") + k
	before := rdb.Time(ctx).Val()
	c, err := s.Claim(ctx, "", k, "m1", time.Minute+time.Microsecond)
	if err != nil || c.Status != idempotency.Claimed {
		t.Fatalf("Claim: %+v, %v", c, err)
	}
	after := rdb.Time(ctx).Val()
	if f, err := unpack(rdb.Get(ctx, name).Val()); err != nil || !f.relative {
		t.Fatalf("the claim's record: %+v, %v; want a relative one", f, err)
	}
	r1, ok, err := s.Lookup(ctx, "", k)
	if err != nil || !ok {
		t.Fatalf("Lookup: %v, %v", ok, err)
	}
	expiry := time.UnixMilli(rdb.PExpireTime(ctx, name).Val().Milliseconds())
	switch {
	case !r1.ClaimedAt.Equal(expiry.Add(-time.Hour + time.Millisecond)):
		t.Errorf("ClaimedAt %v; want the key's expiry %v less the TTL, plus 1 ms", r1.ClaimedAt, expiry)
	case r1.ClaimedAt.Before(before) || r1.ClaimedAt.After(after.Add(time.Millisecond)):
		t.Errorf("ClaimedAt %v; want it in [%v, %v + 1 ms] by the server's clock", r1.ClaimedAt, before, after)
	case !r1.LeaseExpiresAt.Equal(r1.ClaimedAt.Add(time.Minute + time.Microsecond)):
		t.Errorf("LeaseExpiresAt %v; want ClaimedAt %v plus the lease", r1.LeaseExpiresAt, r1.ClaimedAt)
	}
	if err := s.Bind(ctx, "", k, c.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	f, err := unpack(rdb.Get(ctx, name).Val())
	if err != nil || f.relative || f.c != r1.ClaimedAt.UnixMicro() || f.l != r1.LeaseExpiresAt.UnixMicro() || f.e != expiry.Add(time.Millisecond).UnixMicro() {
		t.Errorf("the bound record: %+v, %v; want it absolute, claimed at %v, lease to %v, TTL to %v + 1 ms", f, err, r1.ClaimedAt, r1.LeaseExpiresAt, expiry)
	}
	if got := time.UnixMilli(rdb.PExpireTime(ctx, name).Val().Milliseconds()); !got.Equal(expiry) {
		t.Errorf("the bind moved the key's expiry from %v to %v", expiry, got)
	}
	r2, _, err := s.Lookup(ctx, "", k)
	if err != nil || !r2.ClaimedAt.Equal(r1.ClaimedAt) || !r2.LeaseExpiresAt.Equal(r1.LeaseExpiresAt) || r2.TaskID != "t1" {
		t.Errorf("Lookup after the bind: %+v, %v; want the claim's times, bound to t1", r2, err)
	}
}

// TestRecordCodec: a record packed here reads the same after Redis's cmsgpack unpacks
// and packs it again, and the other way, with strings of every length class and
// every byte.
func TestRecordCodec(t *testing.T) {
	url := redistest.URL(t)
	rdb := redistest.Client(t, url)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	repack := `local f = {cmsgpack.unpack(ARGV[1])}
return cmsgpack.pack(f[1], f[2], f[3], f[4], f[5], f[6], f[7])`
	for _, f := range []rec{
		{m: "m", k: "1", relative: true, l: 60_000_000, e: 86_400_000},
		{m: string(all), k: "9223372036854775807", c: 1 << 52, l: 1<<52 + 1, e: 1<<52 + 2, t: strings.Repeat("t", 300), r: strings.Repeat("\x00\xff", 40_000)},
		{m: strings.Repeat("m", 31), k: "2", c: 0x7f, l: 0xff, e: 0xffff, t: strings.Repeat("t", 32), r: string(all[:255])},
		{m: "m", k: "3", c: 0x10000, l: 0xffffffff, e: 0x100000000, r: "reply only"},
	} {
		v, err := rdb.Eval(context.Background(), repack, nil, string(f.pack(nil))).Text()
		if err != nil {
			t.Fatal(err)
		}
		got, err := unpack(v)
		if err != nil || got != f {
			t.Errorf("through cmsgpack: %+v, %v; want %+v", got, err, f)
		}
	}
	for _, bad := range []string{"", "\xa1m", "\xa1m\xa11\xc0\x00\x00\xa0\xa0", "\xa1m\xa11\x00\x00\x00\xa0\xa0\x00"} {
		if _, err := unpack(bad); !errors.Is(err, errMalformed) {
			t.Errorf("unpack(%q) = %v; want errMalformed", bad, err)
		}
	}
}
