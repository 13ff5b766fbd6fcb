package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/storetest"
	"github.com/a2akit/idempotency/sqlstore"
)

// These tests cover what is particular to the SQL store: two pools on one table, the
// clocks, the sweep's SQL, migrations and the tasks table beside the keys. The
// conformance suite covers the KeyIndex contract as a whole.

const lease = time.Minute

func key(i int) string { return fmt.Sprintf("key-%012d-abcdef", i) }

// testStore runs the store tests against the database open returns.
func testStore(t *testing.T, open func(testing.TB) *database) {
	t.Run("TwoPoolsOneWinner", func(t *testing.T) { testTwoPoolsOneWinner(t, open(t)) })
	t.Run("HeldRecords", func(t *testing.T) { testHeldRecords(t, open(t)) })
	t.Run("TakeoverKeepsClaimTime", func(t *testing.T) { testTakeover(t, open(t)) })
	t.Run("Extend", func(t *testing.T) { testExtend(t, open(t)) })
	t.Run("ExtendByDatabaseClock", func(t *testing.T) { testExtendByDatabaseClock(t, open(t)) })
	t.Run("ExpiredKeyIsNew", func(t *testing.T) { testExpired(t, open(t)) })
	t.Run("BindAndRelease", func(t *testing.T) { testBindAndRelease(t, open(t)) })
	t.Run("DatabaseClock", func(t *testing.T) { testDatabaseClock(t, open(t)) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, open(t)) })
	t.Run("PurgeBatches", func(t *testing.T) { testPurgeBatches(t, open(t)) })
	t.Run("ConcurrentPurges", func(t *testing.T) { testConcurrentPurges(t, open(t)) })
	t.Run("ConcurrentMigrations", func(t *testing.T) { testConcurrentMigrations(t, open(t)) })
	t.Run("KeyOutlivesTask", func(t *testing.T) { testKeyOutlivesTask(t, open(t)) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelledContext(t, open(t)) })
}

func testTwoPoolsOneWinner(t *testing.T, db *database) {
	a, b := db.stores(t, sqlstore.Options{})
	const keys, claimers = 20, 32
	type result struct {
		key    int
		claim  idempotency.Claim
		err    error
		second bool
	}
	results := make(chan result, keys*claimers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range claimers {
		wg.Go(func() {
			s := a
			if g%2 == 1 {
				s = b
			}
			<-start
			for i := range keys {
				k := (i + g) % keys // start on different keys, so that both pools win some
				c, err := s.Claim(context.Background(), "", key(k), "m-"+key(k), lease)
				results <- result{key: k, claim: c, err: err, second: g%2 == 1}
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	won := make(map[int]int)
	var wonByB int
	for r := range results {
		switch {
		case r.err != nil:
			t.Errorf("Claim(%d): %v", r.key, r.err)
		case r.claim.Status == idempotency.Claimed:
			won[r.key]++
			if r.second {
				wonByB++
			}
		case r.claim.Status != idempotency.HeldBySameMessage:
			t.Errorf("Claim(%d) = %v, want claimed or held by same message", r.key, r.claim.Status)
		}
	}
	for k := range keys {
		if won[k] != 1 {
			t.Errorf("key %d: %d claims won, want exactly 1", k, won[k])
		}
	}
	t.Logf("%d of %d keys won through the second pool", wonByB, keys)
}

func testHeldRecords(t *testing.T, db *database) {
	clk := newClock()
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now})
	ctx := context.Background()
	c := mustClaim(t, a, "tenant", key(1), "m1", idempotency.Claimed)
	if c.Token == 0 {
		t.Fatal("Claimed with a zero token")
	}
	claimedAt := clk.Now()
	clk.Advance(time.Second)

	got := mustClaim(t, b, "tenant", key(1), "m1", idempotency.HeldBySameMessage)
	want := idempotency.Record{MessageID: "m1", ClaimedAt: claimedAt, LeaseExpiresAt: claimedAt.Add(lease)}
	if !recordsEqual(got.Record, want) {
		t.Errorf("pending record = %+v, want %+v", got.Record, want)
	}
	if other := mustClaim(t, b, "tenant", key(1), "m2", idempotency.HeldByOtherMessage); !recordsEqual(other.Record, idempotency.Record{}) {
		t.Errorf("HeldByOtherMessage discloses %+v", other.Record)
	}
	mustClaim(t, b, "other-tenant", key(1), "m2", idempotency.Claimed)
	mustClaim(t, b, "租户-ü", key(1), "m3", idempotency.Claimed)
	mustClaim(t, b, "租户-ü", key(1), "m3", idempotency.HeldBySameMessage)
	mustClaim(t, b, strings.Repeat("s", sqlstore.MaxScopeLength), key(1), "m4", idempotency.Claimed)

	reply := []byte(`{"messageId":"r1","role":"ROLE_AGENT","parts":[{"text":"hi"}]}`)
	if err := b.Bind(ctx, "tenant", key(1), c.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatalf("Bind task through the other pool: %v", err)
	}
	if err := a.Bind(ctx, "tenant", key(1), c.Token, idempotency.Binding{TaskID: "t1", Reply: reply}); err != nil {
		t.Fatalf("Bind reply: %v", err)
	}
	want.TaskID, want.Reply = "t1", reply
	got = mustClaim(t, a, "tenant", key(1), "m1", idempotency.HeldBySameMessage)
	if !recordsEqual(got.Record, want) {
		t.Errorf("bound record = %+v, want %+v", got.Record, want)
	}
	rec, ok, err := b.Lookup(ctx, "tenant", key(1))
	if err != nil || !ok || !recordsEqual(rec, want) {
		t.Errorf("Lookup = %+v, %v, %v; want %+v", rec, ok, err, want)
	}
	if _, ok, err := b.Lookup(ctx, "tenant", key(2)); err != nil || ok {
		t.Errorf("Lookup(absent) = %v, %v; want false, nil", ok, err)
	}
}

func testTakeover(t *testing.T, db *database) {
	clk := newClock()
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now})
	ctx := context.Background()
	first := mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	claimedAt := clk.Now()

	clk.Advance(lease - time.Microsecond)
	mustClaim(t, b, "", key(1), "m1", idempotency.HeldBySameMessage)
	clk.Advance(time.Microsecond)
	mustClaim(t, b, "", key(1), "m2", idempotency.HeldByOtherMessage)
	second := mustClaim(t, b, "", key(1), "m1", idempotency.Claimed)
	if second.Token == first.Token {
		t.Fatal("takeover reissued the old token")
	}
	rec, ok, err := a.Lookup(ctx, "", key(1))
	if err != nil || !ok {
		t.Fatalf("Lookup after takeover = %v, %v", ok, err)
	}
	if !rec.ClaimedAt.Equal(claimedAt) || !rec.LeaseExpiresAt.Equal(clk.Now().Add(lease)) {
		t.Errorf("after takeover ClaimedAt = %v, LeaseExpiresAt = %v; want %v, %v",
			rec.ClaimedAt, rec.LeaseExpiresAt, claimedAt, clk.Now().Add(lease))
	}
	if err := a.Bind(ctx, "", key(1), first.Token, idempotency.Binding{TaskID: "late"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(old token) = %v, want ErrNotOwner", err)
	}
	if err := a.Release(ctx, "", key(1), first.Token); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Release(old token) = %v, want ErrNotOwner", err)
	}
	if err := a.Bind(ctx, "", key(1), second.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Errorf("Bind(new token): %v", err)
	}
	clk.Advance(2 * lease)
	mustClaim(t, a, "", key(1), "m1", idempotency.HeldBySameMessage) // bound: never taken over
}

// testExtend: storetest.Extend on two pools with a controllable clock.
func testExtend(t *testing.T, db *database) {
	clk := newClock()
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now})
	storetest.Extend(t, a, b, clk, lease)
}

// testExtendByDatabaseClock: without Options.Now, an extension is judged and counted by
// the database's clock (storetest.ExtendByServerClock).
func testExtendByDatabaseClock(t *testing.T, db *database) {
	a, b := db.stores(t, sqlstore.Options{})
	storetest.ExtendByServerClock(t, a, b, 1500*time.Millisecond)
}

func testExpired(t *testing.T, db *database) {
	clk := newClock()
	const ttl = time.Hour
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now, TTL: ttl})
	ctx := context.Background()
	old := mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	if err := a.Bind(ctx, "", key(1), old.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(ttl - time.Microsecond)
	mustClaim(t, b, "", key(1), "m2", idempotency.HeldByOtherMessage)
	clk.Advance(time.Microsecond)
	if _, ok, err := b.Lookup(ctx, "", key(1)); err != nil || ok {
		t.Errorf("Lookup(expired) = %v, %v; want false, nil", ok, err)
	}
	if err := b.Bind(ctx, "", key(1), old.Token, idempotency.Binding{TaskID: "t1"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(expired) = %v, want ErrNotOwner", err)
	}
	if err := b.Release(ctx, "", key(1), old.Token); err != nil {
		t.Errorf("Release(expired) = %v, want nil", err)
	}
	renewed := mustClaim(t, b, "", key(1), "m2", idempotency.Claimed)
	rec, ok, err := a.Lookup(ctx, "", key(1))
	if err != nil || !ok || rec.MessageID != "m2" || !rec.Pending() || !rec.ClaimedAt.Equal(clk.Now()) {
		t.Errorf("Lookup(renewed) = %+v, %v, %v; want pending m2 claimed at %v", rec, ok, err, clk.Now())
	}
	if err := a.Bind(ctx, "", key(1), old.Token, idempotency.Binding{TaskID: "t1"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(token of the expired claim) = %v, want ErrNotOwner", err)
	}
	if err := a.Bind(ctx, "", key(1), renewed.Token, idempotency.Binding{TaskID: "t2"}); err != nil {
		t.Errorf("Bind(renewed): %v", err)
	}
}

func testBindAndRelease(t *testing.T, db *database) {
	a, b := db.stores(t, sqlstore.Options{})
	ctx := context.Background()
	reply := []byte(`{"messageId":"r"}`)

	c := mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	for _, tc := range []struct {
		b    idempotency.Binding
		want error
	}{
		{idempotency.Binding{TaskID: "t1"}, nil},
		{idempotency.Binding{TaskID: "t1"}, nil}, // idempotent
		{idempotency.Binding{TaskID: "t2"}, idempotency.ErrAlreadyBound},
		{idempotency.Binding{Reply: reply}, idempotency.ErrAlreadyBound},
		{idempotency.Binding{TaskID: "t2", Reply: reply}, idempotency.ErrAlreadyBound},
		{idempotency.Binding{TaskID: "t1", Reply: reply}, nil}, // the task gains a reply
		{idempotency.Binding{TaskID: "t1", Reply: reply}, nil},
		{idempotency.Binding{TaskID: "t1"}, nil}, // a part of what is bound
		{idempotency.Binding{Reply: reply}, nil}, // a part of what is bound
		{idempotency.Binding{TaskID: "t2"}, idempotency.ErrAlreadyBound},
		{idempotency.Binding{TaskID: "t1", Reply: []byte(`{}`)}, idempotency.ErrAlreadyBound},
		{idempotency.Binding{}, idempotency.ErrInvalidArgument},
	} {
		if err := b.Bind(ctx, "", key(1), c.Token, tc.b); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Bind(%q, %q) = %v, want %v", tc.b.TaskID, tc.b.Reply, err, tc.want)
		}
	}
	if err := b.Bind(ctx, "", key(1), c.Token+1, idempotency.Binding{TaskID: "t1"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(other token) = %v, want ErrNotOwner", err)
	}
	if err := b.Release(ctx, "", key(1), c.Token); err != nil {
		t.Errorf("Release(bound) = %v, want nil", err)
	}
	if err := b.Release(ctx, "", key(1), c.Token+1); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Release(bound, other token) = %v, want ErrNotOwner", err)
	}
	mustClaim(t, a, "", key(1), "m1", idempotency.HeldBySameMessage)

	// A reply alone.
	r := mustClaim(t, a, "", key(2), "m1", idempotency.Claimed)
	if err := b.Bind(ctx, "", key(2), r.Token, idempotency.Binding{Reply: reply}); err != nil {
		t.Fatal(err)
	}
	if got := mustClaim(t, b, "", key(2), "m1", idempotency.HeldBySameMessage); got.Record.TaskID != "" || !bytes.Equal(got.Record.Reply, reply) {
		t.Errorf("reply-only record = %+v", got.Record)
	}

	// Release frees a pending claim; the old token is then fenced out.
	p := mustClaim(t, a, "", key(3), "m1", idempotency.Claimed)
	if err := b.Release(ctx, "", key(3), p.Token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := b.Release(ctx, "", key(3), p.Token); err != nil {
		t.Errorf("Release(released) = %v, want nil", err)
	}
	if _, ok, err := a.Lookup(ctx, "", key(3)); ok || err != nil {
		t.Errorf("Lookup(released) = %v, %v", ok, err)
	}
	q := mustClaim(t, b, "", key(3), "m2", idempotency.Claimed)
	if err := a.Release(ctx, "", key(3), p.Token); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Release(old token, held by another) = %v, want ErrNotOwner", err)
	}
	if err := a.Bind(ctx, "", key(3), p.Token, idempotency.Binding{TaskID: "t"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(old token, held by another) = %v, want ErrNotOwner", err)
	}
	if err := a.Release(ctx, "", key(4), q.Token); err != nil {
		t.Errorf("Release(never claimed) = %v, want nil", err)
	}

	for name, err := range map[string]error{
		"Claim(bad key)":         claimErr(a.Claim(ctx, "", "short", "m", lease)),
		"Claim(no message)":      claimErr(a.Claim(ctx, "", key(9), "", lease)),
		"Claim(no lease)":        claimErr(a.Claim(ctx, "", key(9), "m", 0)),
		"Bind(zero token)":       a.Bind(ctx, "", key(9), 0, idempotency.Binding{TaskID: "t"}),
		"Release(bad key)":       a.Release(ctx, "", "bad key with spaces", 1),
		"Release(zero)":          a.Release(ctx, "", key(9), 0),
		"Lookup(bad key)":        lookupErr(a.Lookup(ctx, "", "x")),
		"Claim(long scope)":      claimErr(a.Claim(ctx, strings.Repeat("s", sqlstore.MaxScopeLength+1), key(9), "m", lease)),
		"Claim(long message id)": claimErr(a.Claim(ctx, "", key(9), strings.Repeat("m", idempotency.MaxMessageIDLength+1), lease)),
		"Bind(long task id)":     a.Bind(ctx, "", key(9), 1, idempotency.Binding{TaskID: strings.Repeat("t", idempotency.MaxTaskIDLength+1)}),
		"Bind(long reply)":       a.Bind(ctx, "", key(9), 1, idempotency.Binding{Reply: make([]byte, idempotency.MaxReplyLength+1)}),
	} {
		if !errors.Is(err, idempotency.ErrInvalidArgument) {
			t.Errorf("%s = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// testDatabaseClock runs without Options.Now: every time comes from the database.
func testDatabaseClock(t *testing.T, db *database) {
	a, b := db.stores(t, sqlstore.Options{})
	ctx := context.Background()
	before := time.Now()
	c := mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	after := time.Now()
	rec, ok, err := b.Lookup(ctx, "", key(1))
	if err != nil || !ok {
		t.Fatalf("Lookup = %v, %v", ok, err)
	}
	// The database's clock may differ a little from ours (and SQLite's counts
	// milliseconds).
	if rec.ClaimedAt.Before(before.Add(-2*time.Second)) || rec.ClaimedAt.After(after.Add(2*time.Second)) {
		t.Errorf("ClaimedAt = %v, want between %v and %v", rec.ClaimedAt, before, after)
	}
	if d := rec.LeaseExpiresAt.Sub(rec.ClaimedAt); d != lease {
		t.Errorf("LeaseExpiresAt - ClaimedAt = %v, want %v", d, lease)
	}

	// A short lease ends by the database's clock.
	short := mustClaimLease(t, a, "", key(2), "m1", 5*time.Millisecond, idempotency.Claimed)
	time.Sleep(20 * time.Millisecond)
	taken := mustClaimLease(t, b, "", key(2), "m1", time.Minute, idempotency.Claimed)
	if taken.Token == short.Token {
		t.Error("takeover reissued the old token")
	}
	if err := a.Bind(ctx, "", key(2), short.Token, idempotency.Binding{TaskID: "t"}); !errors.Is(err, idempotency.ErrNotOwner) {
		t.Errorf("Bind(old token) = %v, want ErrNotOwner", err)
	}
	if err := a.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
		t.Errorf("Bind: %v", err)
	}
	rep, err := a.PurgeExpired(ctx, idempotency.RetentionPolicy{})
	if err != nil || rep != (idempotency.PurgeReport{Complete: true}) {
		t.Errorf("PurgeExpired(fresh keys) = %+v, %v; want nothing deleted", rep, err)
	}
}

func testPurge(t *testing.T, db *database) {
	clk := newClock()
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now, TTL: 48 * time.Hour})
	ctx := context.Background()
	bind := func(s *sqlstore.Store, scope string, k int, c idempotency.Claim) {
		t.Helper()
		if err := s.Bind(ctx, scope, key(k), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	bind(a, "", 1, mustClaim(t, a, "", key(1), "m", idempotency.Claimed))                       // bound, will be old
	mustClaim(t, a, "", key(2), "m", idempotency.Claimed)                                       // abandoned, will be old
	mustClaimLease(t, a, "", key(3), "m", 30*time.Hour, idempotency.Claimed)                    // pending, lease running
	bind(b, "other-scope", 4, mustClaim(t, b, "other-scope", key(4), "m", idempotency.Claimed)) // old, other scope
	clk.Advance(23 * time.Hour)
	bind(a, "", 5, mustClaim(t, a, "", key(5), "m", idempotency.Claimed)) // young
	clk.Advance(time.Hour)                                                // keys 1 to 4 are 24 h old

	// The terminal-task retention raises the key age.
	rep, err := b.PurgeExpired(ctx, idempotency.RetentionPolicy{KeyMaxAge: time.Minute, TerminalTaskRetention: 25 * time.Hour})
	if err != nil || rep != (idempotency.PurgeReport{Complete: true}) {
		t.Errorf("PurgeExpired(25 h retention) = %+v, %v; want nothing deleted", rep, err)
	}
	rep, err = b.PurgeExpired(ctx, idempotency.RetentionPolicy{KeyMaxAge: -1})
	if err != nil || rep != (idempotency.PurgeReport{Complete: true}) {
		t.Errorf("PurgeExpired(disabled) = %+v, %v", rep, err)
	}
	rep, err = b.PurgeExpired(ctx, idempotency.RetentionPolicy{})
	if want := (idempotency.PurgeReport{KeysDeleted: 3, Batches: 1, Complete: true}); err != nil || rep != want {
		t.Errorf("PurgeExpired = %+v, %v; want %+v", rep, err, want)
	}
	present := func(scope string, k int) bool {
		_, ok, err := a.Lookup(ctx, scope, key(k))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, k := range []struct {
		scope string
		k     int
		want  bool
	}{{"", 1, false}, {"", 2, false}, {"", 3, true}, {"other-scope", 4, false}, {"", 5, true}} {
		if got := present(k.scope, k.k); got != k.want {
			t.Errorf("key %d present = %v after purge, want %v", k.k, got, k.want)
		}
	}
	// Past its lease the abandoned pending claim goes too; the young key stays.
	clk.Advance(6*time.Hour + time.Microsecond)
	rep, err = a.PurgeExpired(ctx, idempotency.RetentionPolicy{})
	if want := (idempotency.PurgeReport{KeysDeleted: 1, Batches: 1, Complete: true}); err != nil || rep != want {
		t.Errorf("PurgeExpired(lease ended) = %+v, %v; want %+v", rep, err, want)
	}
	if !present("", 5) {
		t.Error("the young key was purged")
	}

	// Keys past the store's TTL go whatever the policy's age.
	clk.Advance(48 * time.Hour)
	rep, err = a.PurgeExpired(ctx, idempotency.RetentionPolicy{KeyMaxAge: 1000 * time.Hour})
	if want := (idempotency.PurgeReport{KeysDeleted: 1, Batches: 1, Complete: true}); err != nil || rep != want {
		t.Errorf("PurgeExpired(past TTL) = %+v, %v; want %+v", rep, err, want)
	}
}

func testPurgeBatches(t *testing.T, db *database) {
	clk := newClock()
	a, _ := db.stores(t, sqlstore.Options{Now: clk.Now})
	ctx := context.Background()
	for k := range 7 {
		c := mustClaim(t, a, "", key(k), "m", idempotency.Claimed)
		if err := a.Bind(ctx, "", key(k), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(25 * time.Hour)
	mustClaim(t, a, "", key(100), "m", idempotency.Claimed) // young

	policy := idempotency.RetentionPolicy{BatchSize: 2, MaxBatches: 1}
	for _, want := range []idempotency.PurgeReport{
		{KeysDeleted: 2, Batches: 1, Complete: false},
		{KeysDeleted: 2, Batches: 1, Complete: false},
		{KeysDeleted: 2, Batches: 1, Complete: false}, // one key left
		{KeysDeleted: 1, Batches: 1, Complete: true},
		{Complete: true},
	} {
		if rep, err := a.PurgeExpired(ctx, policy); err != nil || rep != want {
			t.Errorf("PurgeExpired(batch 2, max 1) = %+v, %v; want %+v", rep, err, want)
		}
	}

	// Exactly MaxBatches full batches: the sweep checks and reports completion.
	for k := 200; k < 203; k++ {
		mustClaimLease(t, a, "", key(k), "m", time.Microsecond, idempotency.Claimed)
	}
	clk.Advance(25 * time.Hour) // the three and key 100 are old, and their leases ended
	rep, err := a.PurgeExpired(ctx, idempotency.RetentionPolicy{BatchSize: 2, MaxBatches: 2})
	if want := (idempotency.PurgeReport{KeysDeleted: 4, Batches: 2, Complete: true}); err != nil || rep != want {
		t.Errorf("PurgeExpired(4 keys, batch 2, max 2) = %+v, %v; want %+v", rep, err, want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if rep, err := a.PurgeExpired(cancelled, idempotency.RetentionPolicy{}); !errors.Is(err, context.Canceled) || rep.Complete {
		t.Errorf("PurgeExpired(cancelled) = %+v, %v; want context.Canceled", rep, err)
	}
}

func testConcurrentPurges(t *testing.T, db *database) {
	clk := newClock()
	a, b := db.stores(t, sqlstore.Options{Now: clk.Now})
	ctx := context.Background()
	const keys = 300
	for k := range keys {
		c := mustClaim(t, a, "", key(k), "m", idempotency.Claimed)
		if err := a.Bind(ctx, "", key(k), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(25 * time.Hour)
	type result struct {
		rep idempotency.PurgeReport
		err error
	}
	results := make(chan result, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			rep, err := s.PurgeExpired(ctx, idempotency.RetentionPolicy{BatchSize: 7})
			results <- result{rep, err}
		})
	}
	wg.Wait()
	close(results)
	var deleted int64
	for r := range results {
		if r.err != nil {
			t.Errorf("PurgeExpired: %v", r.err)
		}
		deleted += r.rep.KeysDeleted
	}
	if deleted != keys {
		t.Errorf("concurrent sweeps deleted %d keys in all, want %d", deleted, keys)
	}
	if rep, err := a.PurgeExpired(ctx, idempotency.RetentionPolicy{}); err != nil || rep.KeysDeleted != 0 {
		t.Errorf("PurgeExpired after the sweeps = %+v, %v; want nothing left", rep, err)
	}
}

func testConcurrentMigrations(t *testing.T, db *database) {
	opts := sqlstore.Options{Table: db.prefix + testkit.RandomName("fresh_")}
	a, err := sqlstore.New(db.a, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlstore.New(db.b, opts)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := a
			if i%2 == 1 {
				s = b
			}
			errs <- s.Migrate(context.Background())
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	mustClaim(t, a, "", key(1), "m", idempotency.Claimed)
	if err := b.Migrate(context.Background()); err != nil {
		t.Errorf("Migrate again: %v", err)
	}
	mustClaim(t, b, "", key(1), "m", idempotency.HeldBySameMessage)
}

// testKeyOutlivesTask puts a tasks table beside the key table: deleting a task keeps
// its key and the key's task id.
func testKeyOutlivesTask(t *testing.T, db *database) {
	a, b := db.stores(t, sqlstore.Options{Table: db.prefix + "keys"})
	ctx := context.Background()
	tasks := db.prefix + "tasks"
	if _, err := db.a.ExecContext(ctx, `CREATE TABLE `+tasks+` (id TEXT PRIMARY KEY, state TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.a.ExecContext(ctx, db.a.Rebind(`INSERT INTO `+tasks+` (id, state) VALUES (?, ?)`), "task-1", "completed"); err != nil {
		t.Fatal(err)
	}
	c := mustClaim(t, a, "", key(1), "m1", idempotency.Claimed)
	if err := a.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "task-1"}); err != nil {
		t.Fatal(err)
	}
	res, err := db.b.ExecContext(ctx, db.b.Rebind(`DELETE FROM `+tasks+` WHERE id = ?`), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("deleted %d task rows, want 1", n)
	}
	rec, ok, err := b.Lookup(ctx, "", key(1))
	if err != nil || !ok || rec.TaskID != "task-1" {
		t.Errorf("Lookup after the task's deletion = %+v, %v, %v; want the key bound to task-1", rec, ok, err)
	}
	if got := mustClaim(t, b, "", key(1), "m1", idempotency.HeldBySameMessage); got.Record.TaskID != "task-1" {
		t.Errorf("retry after the task's deletion = %+v, want task-1", got.Record)
	}
	// The key table references nothing.
	var fks int
	switch db.dialect {
	case sqlstore.PostgreSQL:
		err = db.a.GetContext(ctx, &fks, `SELECT count(*) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f'`, a.Table())
	case sqlstore.SQLite:
		err = db.a.GetContext(ctx, &fks, `SELECT count(*) FROM pragma_foreign_key_list(?)`, a.Table())
	}
	if err != nil || fks != 0 {
		t.Errorf("the key table has %d foreign keys (%v), want none", fks, err)
	}
}

func testCancelledContext(t *testing.T, db *database) {
	a, _ := db.stores(t, sqlstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := a.Claim(ctx, "", key(1), "m", lease)
	if !errors.Is(err, context.Canceled) || c.Status == idempotency.Claimed {
		t.Errorf("Claim(cancelled) = %v, %v; want context.Canceled", c.Status, err)
	}
	if _, ok, err := a.Lookup(context.Background(), "", key(1)); ok || err != nil {
		t.Errorf("a cancelled Claim stored the key (%v, %v)", ok, err)
	}
	if _, _, err := a.Lookup(ctx, "", key(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Lookup(cancelled) = %v, want context.Canceled", err)
	}
	if err := a.Bind(ctx, "", key(1), 1, idempotency.Binding{TaskID: "t"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Bind(cancelled) = %v, want context.Canceled", err)
	}
	if err := a.Release(ctx, "", key(1), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Release(cancelled) = %v, want context.Canceled", err)
	}
	if err := a.Migrate(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate(cancelled) = %v, want context.Canceled", err)
	}
}

func mustClaim(t *testing.T, s *sqlstore.Store, scope, key, messageID string, want idempotency.ClaimStatus) idempotency.Claim {
	t.Helper()
	return mustClaimLease(t, s, scope, key, messageID, lease, want)
}

func mustClaimLease(t *testing.T, s *sqlstore.Store, scope, key, messageID string, lease time.Duration, want idempotency.ClaimStatus) idempotency.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), scope, key, messageID, lease)
	if err != nil {
		t.Fatalf("Claim(%q, %q, %q): %v", scope, key, messageID, err)
	}
	if c.Status != want {
		t.Fatalf("Claim(%q, %q, %q) = %v, want %v", scope, key, messageID, c.Status, want)
	}
	return c
}

func recordsEqual(a, b idempotency.Record) bool {
	return a.MessageID == b.MessageID && a.TaskID == b.TaskID && bytes.Equal(a.Reply, b.Reply) &&
		(a.Reply == nil) == (b.Reply == nil) &&
		a.ClaimedAt.Equal(b.ClaimedAt) && a.LeaseExpiresAt.Equal(b.LeaseExpiresAt)
}

func claimErr(_ idempotency.Claim, err error) error           { return err }
func lookupErr(_ idempotency.Record, _ bool, err error) error { return err }
