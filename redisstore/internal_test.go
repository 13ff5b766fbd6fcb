package redisstore

import (
	"context"
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
	tok := newToken()
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
