package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// checkHonoursKeys: an index that implements [idempotency.Honouring] reports that it
// honours keys; otherwise the middleware would refuse every keyed send, and the rest
// of the suite would test an index nobody uses.
func checkHonoursKeys(e *env) error {
	h, ok := e.ix.(idempotency.Honouring)
	if !ok {
		return skipf("the index does not implement idempotency.Honouring")
	}
	if !h.HonoursKeys(e.ctx) {
		return errors.New("HonoursKeys = false; want true for the index under test")
	}
	return nil
}

// maxFill bounds the number of keys the capacity checks claim to fill a scope.
const maxFill = 10000

func (e *env) capacity() (idempotency.CapacityReporter, error) {
	c, ok := e.ix.(idempotency.CapacityReporter)
	if !ok {
		return nil, skipf("the index does not implement idempotency.CapacityReporter")
	}
	return c, nil
}

func (e *env) wantHeldCount(c idempotency.CapacityReporter, scope string, want int) (idempotency.Capacity, error) {
	got, err := c.Capacity(e.ctx, scope)
	if err != nil {
		return got, fmt.Errorf("Capacity(%q): %w", scope, err)
	}
	if got.Held != want || got.Limit < 0 || (got.Limit > 0 && got.Held > got.Limit) {
		return got, fmt.Errorf("Capacity(%q) = %+v; want Held %d and a Limit that is zero or at least Held", scope, got, want)
	}
	return got, nil
}

// checkCapacityCountsClaims: Capacity counts the keys a scope holds, pending or bound,
// and only that scope's; a released key no longer counts.
func checkCapacityCountsClaims(e *env) error {
	c, err := e.capacity()
	if err != nil {
		return err
	}
	scope, other := e.scope(), e.scope()
	if _, err := e.wantHeldCount(c, scope, 0); err != nil {
		return fmt.Errorf("fresh scope: %w", err)
	}
	var toks []idempotency.Token
	var keys []string
	for range 3 {
		key := e.key()
		tok, err := e.own(scope, key, msgA, longLease)
		if err != nil {
			return err
		}
		keys, toks = append(keys, key), append(toks, tok)
	}
	if err := e.bind(scope, keys[0], toks[0], boundA); err != nil {
		return err
	}
	if _, err := e.own(other, e.key(), msgA, longLease); err != nil {
		return err
	}
	if _, err := e.wantHeldCount(c, scope, 3); err != nil {
		return fmt.Errorf("after 3 claims (one bound) and a claim in another scope: %w", err)
	}
	if err := e.release(scope, keys[2], toks[2]); err != nil {
		return err
	}
	if _, err := e.wantHeldCount(c, scope, 2); err != nil {
		return fmt.Errorf("after a Release: %w", err)
	}
	return nil
}

// fill claims a scope's whole capacity, binding every other key, and returns the keys
// and tokens. It skips when the index has no bound, or one too large to fill.
func (e *env) fill(c idempotency.CapacityReporter, scope string) ([]string, []idempotency.Token, error) {
	capa, err := e.wantHeldCount(c, scope, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("fresh scope: %w", err)
	}
	switch {
	case capa.Limit == 0:
		return nil, nil, skipf("the index reports no bound on keys per scope (Capacity.Limit is 0)")
	case capa.Limit > maxFill:
		return nil, nil, skipf("the index bounds a scope to %d keys, more than the %d this check fills; "+
			"build the index with a smaller bound to check it", capa.Limit, maxFill)
	}
	keys := make([]string, capa.Limit)
	toks := make([]idempotency.Token, capa.Limit)
	for i := range keys {
		keys[i] = e.key()
		if toks[i], err = e.own(scope, keys[i], msgA, longLease); err != nil {
			return nil, nil, fmt.Errorf("claim %d of %d (the scope's bound): %w", i+1, capa.Limit, err)
		}
		if i%2 == 1 {
			if err := e.bind(scope, keys[i], toks[i], boundA); err != nil {
				return nil, nil, err
			}
		}
	}
	if _, err := e.wantHeldCount(c, scope, capa.Limit); err != nil {
		return nil, nil, fmt.Errorf("full scope: %w", err)
	}
	return keys, toks, nil
}

// checkCapacityFull: when a scope holds as many keys as the index allows, a Claim of a
// new key returns ErrFull and evicts nothing; retries of the keys held still get
// their answers, other scopes are unaffected, and a release makes room.
func checkCapacityFull(e *env) error {
	c, err := e.capacity()
	if err != nil {
		return err
	}
	scope := e.scope()
	keys, toks, err := e.fill(c, scope)
	if err != nil {
		return err
	}
	extra := e.key()
	got, err := e.ix.Claim(e.ctx, scope, extra, msgB, longLease)
	if err := wantErr(fmt.Sprintf("Claim of a new key in a full scope (result %s)", describe(got)), err, idempotency.ErrFull); err != nil {
		return err
	}
	if err := e.wantAbsent(scope, extra); err != nil {
		return err
	}
	for i, key := range keys {
		b := pending
		if i%2 == 1 {
			b = boundA
		}
		if _, err := e.wantHeld(scope, key, msgA, b); err != nil {
			return fmt.Errorf("key %d of a full scope, after a Claim was refused: %w", i+1, err)
		}
	}
	if _, err := e.wantSame(scope, keys[0], msgA, pending); err != nil {
		return fmt.Errorf("a retry in a full scope: %w", err)
	}
	if len(keys) > 1 {
		if _, err := e.wantSame(scope, keys[1], msgA, boundA); err != nil {
			return fmt.Errorf("a retry in a full scope: %w", err)
		}
	}
	if _, err := e.own(e.scope(), extra, msgB, longLease); err != nil {
		return fmt.Errorf("another scope, while one is full: %w", err)
	}
	if err := e.release(scope, keys[0], toks[0]); err != nil {
		return err
	}
	if _, err := e.own(scope, extra, msgB, longLease); err != nil {
		return fmt.Errorf("after a Release in a full scope: %w", err)
	}
	return nil
}

// checkCapacityIgnoresExpired: keys past their time to live count as absent, so they do
// not keep a scope full.
func checkCapacityIgnoresExpired(e *env) error {
	c, err := e.capacity()
	if err != nil {
		return err
	}
	scope := e.scope()
	start := time.Now()
	if _, _, err := e.fill(c, scope); err != nil {
		return err
	}
	e.since(start).to(e.h.TTL + e.ttlMargin())
	if _, err := e.own(scope, e.key(), msgB, longLease); err != nil {
		return fmt.Errorf("in a scope full of keys past their TTL: %w", err)
	}
	return nil
}

func (e *env) sweeper() (idempotency.Sweeper, error) {
	s, ok := e.ix.(idempotency.Sweeper)
	if !ok {
		return nil, skipf("the index does not implement idempotency.Sweeper")
	}
	return s, nil
}

// sweepUnit is the key age the sweep checks purge with; their keys are twice as old.
// Keys are aged by minutes on a controllable clock (less when the TTL is shorter than
// a quarter of an hour) and by a tenth of a second on the real clock.
func (e *env) sweepUnit() time.Duration {
	switch {
	case !e.clock():
		return 100 * time.Millisecond
	case e.h.TTL > 0:
		return min(time.Minute, e.h.TTL/16)
	}
	return time.Minute
}

// oldKeys claims and binds n keys in scope and lets twice the sweep unit pass.
func (e *env) oldKeys(scope string, n int) ([]string, error) {
	start := time.Now()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key()
		if _, err := e.ownBound(scope, keys[i], msgA, boundA); err != nil {
			return nil, err
		}
	}
	e.since(start).to(2 * e.sweepUnit())
	return keys, nil
}

// absent counts the keys of scope that Lookup reports absent.
func (e *env) absent(scope string, keys []string) (int, error) {
	n := 0
	for _, key := range keys {
		_, ok, err := e.ix.Lookup(e.ctx, scope, key)
		if err != nil {
			return 0, fmt.Errorf("Lookup(%s): %w", where(scope, key), err)
		}
		if !ok {
			n++
		}
	}
	return n, nil
}

func purge(ctx context.Context, s idempotency.Sweeper, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	r, err := s.PurgeExpired(ctx, p)
	if err != nil {
		return r, fmt.Errorf("PurgeExpired(%+v): %w", p, err)
	}
	return r, nil
}

// checkSweepDeletesOldKeys: PurgeExpired deletes the bound keys older than the
// policy's age, keeps younger ones, and reports what it did: at least the keys it
// deleted here, at least one batch, complete.
func checkSweepDeletesOldKeys(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	old, err := e.oldKeys(scope, 5)
	if err != nil {
		return err
	}
	young := e.key()
	youngAt := time.Now()
	if _, err := e.ownBound(scope, young, msgA, boundA); err != nil {
		return err
	}
	p := idempotency.RetentionPolicy{KeyMaxAge: u}
	rep, err := purge(e.ctx, s, p)
	if err != nil {
		return err
	}
	if _, err := e.wantHeld(scope, young, msgA, boundA); err != nil {
		if !e.clock() && time.Since(youngAt) >= u {
			return stalled("the sweep", u)
		}
		return fmt.Errorf("a key younger than the policy's age, after PurgeExpired(%+v): %w", p, err)
	}
	for _, key := range old {
		if err := e.wantAbsent(scope, key); err != nil {
			return fmt.Errorf("a key %v old, after PurgeExpired(%+v): %w", 2*u, p, err)
		}
	}
	if rep.KeysDeleted < int64(len(old)) || rep.Batches < 1 || !rep.Complete {
		return fmt.Errorf("PurgeExpired(%+v) = %+v after deleting %d keys; want KeysDeleted at least %d, Batches at least 1, Complete",
			p, rep, len(old), len(old))
	}
	return nil
}

// checkSweepKeepsPendingInLease: PurgeExpired never deletes a pending claim whose lease
// is still running, however old the claim; its owner can still bind it.
func checkSweepKeepsPendingInLease(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	key := e.key()
	start := time.Now()
	tok, err := e.own(scope, key, msgA, 10*u)
	if err != nil {
		return err
	}
	old := e.key()
	if _, err := e.ownBound(scope, old, msgA, boundA); err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(2 * u)
	p := idempotency.RetentionPolicy{KeyMaxAge: u}
	if _, err := purge(e.ctx, s, p); err != nil {
		return err
	}
	if _, err := e.wantHeld(scope, key, msgA, pending); err != nil {
		if tl.overran(10 * u) {
			return stalled("the sweep", 10*u)
		}
		return fmt.Errorf("a pending claim %v old whose lease of %v runs, after PurgeExpired(%+v): %w", 2*u, 10*u, p, err)
	}
	if err := e.bind(scope, key, tok, boundA); err != nil {
		return fmt.Errorf("after PurgeExpired: %w", err)
	}
	if err := e.wantAbsent(scope, old); err != nil {
		return fmt.Errorf("a bound key %v old, after PurgeExpired(%+v): %w", 2*u, p, err)
	}
	return nil
}

// checkSweepPolicyAge: PurgeExpired keeps keys younger than the policy's effective age:
// the zero policy's 24 hours, a KeyMaxAge raised to TerminalTaskRetention, and a
// negative KeyMaxAge, which disables the sweep. Then a policy they are older than
// deletes them.
func checkSweepPolicyAge(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	keys, err := e.oldKeys(scope, 3)
	if err != nil {
		return err
	}
	keep := []struct {
		name string
		p    idempotency.RetentionPolicy
	}{
		{"the zero policy (keys live 24 hours)", idempotency.RetentionPolicy{}},
		{"a KeyMaxAge raised to a longer TerminalTaskRetention", idempotency.RetentionPolicy{KeyMaxAge: u, TerminalTaskRetention: 4 * u}},
		{"a negative KeyMaxAge (sweep disabled)", idempotency.RetentionPolicy{KeyMaxAge: -1}},
	}
	for _, k := range keep {
		rep, err := purge(e.ctx, s, k.p)
		if err != nil {
			return err
		}
		if k.p.KeyMaxAge < 0 && rep.KeysDeleted != 0 {
			return fmt.Errorf("PurgeExpired with %s = %+v; want nothing deleted", k.name, rep)
		}
		for _, key := range keys {
			if _, err := e.wantHeld(scope, key, msgA, boundA); err != nil {
				return fmt.Errorf("a key %v old, after PurgeExpired with %s: %w", 2*u, k.name, err)
			}
		}
	}
	if _, err := purge(e.ctx, s, idempotency.RetentionPolicy{KeyMaxAge: u}); err != nil {
		return err
	}
	gone, err := e.absent(scope, keys)
	if err != nil {
		return err
	}
	if gone != len(keys) {
		return fmt.Errorf("%d of %d keys %v old are left after PurgeExpired with KeyMaxAge %v; want none", len(keys)-gone, len(keys), 2*u, u)
	}
	return nil
}

// checkSweepBatches: with MaxBatches 1, PurgeExpired stops after one batch of at most
// BatchSize keys and reports that it is not complete; further calls finish the job.
func checkSweepBatches(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	keys, err := e.oldKeys(scope, 5)
	if err != nil {
		return err
	}
	p := idempotency.RetentionPolicy{KeyMaxAge: u, BatchSize: 2, MaxBatches: 1}
	rep, err := purge(e.ctx, s, p)
	if err != nil {
		return err
	}
	if rep.Batches != 1 || rep.KeysDeleted < 1 || rep.KeysDeleted > 2 || rep.Complete {
		return fmt.Errorf("PurgeExpired(%+v) with 5 keys to delete = %+v; want 1 batch of 1 or 2 keys, not Complete", p, rep)
	}
	p.MaxBatches = 0
	for i := 0; !rep.Complete; i++ {
		if i == 10 {
			return fmt.Errorf("PurgeExpired(%+v) still not Complete after 10 calls", p)
		}
		if rep, err = purge(e.ctx, s, p); err != nil {
			return err
		}
		if rep.KeysDeleted > int64(p.BatchSize*rep.Batches) {
			return fmt.Errorf("PurgeExpired(%+v) = %+v; want at most %d keys per batch", p, rep, p.BatchSize)
		}
	}
	gone, err := e.absent(scope, keys)
	if err != nil {
		return err
	}
	if gone != len(keys) {
		return fmt.Errorf("%d of %d keys to delete are left after the sweep reported Complete", len(keys)-gone, len(keys))
	}
	return nil
}

// checkSweepCancelled: PurgeExpired with a cancelled context returns the context's
// error and deletes no more than it reports.
func checkSweepCancelled(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	keys, err := e.oldKeys(scope, 3)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	p := idempotency.RetentionPolicy{KeyMaxAge: u}
	rep, err := s.PurgeExpired(ctx, p)
	if err := wantErr(fmt.Sprintf("PurgeExpired(%+v) with a cancelled context", p), err, context.Canceled); err != nil {
		return err
	}
	gone, err := e.absent(scope, keys)
	if err != nil {
		return err
	}
	if int64(gone) > rep.KeysDeleted {
		return fmt.Errorf("PurgeExpired with a cancelled context reported %+v but %d keys are gone", rep, gone)
	}
	return nil
}
