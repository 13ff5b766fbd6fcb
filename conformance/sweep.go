package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// sweepScope is the prologue of the sweep checks: the index's Sweeper, a fresh scope
// and the sweep unit. It skips when the index is no Sweeper.
func (e *env) sweepScope() (s idempotency.Sweeper, scope string, u time.Duration, err error) {
	s, ok := e.ix.(idempotency.Sweeper)
	if !ok {
		return nil, "", 0, skipf("the index does not implement idempotency.Sweeper")
	}
	return s, e.scope(), e.sweepUnit(), nil
}

// oldSweep is sweepScope for the checks that sweep old keys: it also claims and binds
// n keys in the scope and lets twice the sweep unit pass (oldKeys).
func (e *env) oldSweep(n int) (s idempotency.Sweeper, scope string, u time.Duration, keys []string, err error) {
	if s, scope, u, err = e.sweepScope(); err == nil {
		keys, err = e.oldKeys(scope, n)
	}
	return s, scope, u, keys, err
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
	s, scope, u, old, err := e.oldSweep(5)
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
	s, scope, u, err := e.sweepScope()
	if err != nil {
		return err
	}
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
	start := time.Now()
	s, scope, u, keys, err := e.oldSweep(3)
	if err != nil {
		return err
	}
	tl := e.since(start)
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
				if tl.overran(4 * u) {
					return stalled("the sweeps", 4*u)
				}
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
	s, scope, u, keys, err := e.oldSweep(5)
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
	total := rep.KeysDeleted
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
		total += rep.KeysDeleted
	}
	gone, err := e.absent(scope, keys)
	if err != nil {
		return err
	}
	if gone != len(keys) {
		return fmt.Errorf("%d of %d keys to delete are left after the sweep reported Complete", len(keys)-gone, len(keys))
	}
	if total != int64(len(keys)) {
		return fmt.Errorf("the sweeps that deleted %d keys reported %d deleted in all; want KeysDeleted to count exactly the keys each call deleted",
			len(keys), total)
	}
	return nil
}

// checkSweepKeepsYoungKeys: PurgeExpired keeps a key younger than the policy's age
// even when it is a pending claim whose lease ended.
func checkSweepKeepsYoungKeys(e *env) error {
	s, scope, u, err := e.sweepScope()
	if err != nil {
		return err
	}
	key := e.key()
	start := time.Now()
	if _, err := e.own(scope, key, msgA, u); err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(2 * u)
	p := idempotency.RetentionPolicy{KeyMaxAge: 10 * u}
	if _, err := purge(e.ctx, s, p); err != nil {
		return err
	}
	if _, err := e.wantHeld(scope, key, msgA, pending); err != nil {
		if tl.overran(10 * u) {
			return stalled("the sweep", 10*u)
		}
		return fmt.Errorf("a pending claim %v old whose lease of %v ended, after PurgeExpired(%+v) "+
			"(an abandoned claim is deleted only once it is older than the policy's age): %w", 2*u, u, p, err)
	}
	return nil
}

// sweepRaceKeys is how many keys SweepRacingClaims claims afresh while the sweep runs,
// in batches of sweepRaceBatch.
const (
	sweepRaceKeys  = 3 * (racers - 1)
	sweepRaceBatch = 4
)

// checkSweepRacingClaims: a sweep in small batches runs while racers claim afresh the
// keys it is deleting (keys past their TTL, which count as absent), spread over the
// sweep and across both handles: every claim that won is a young pending claim and
// survives the sweep. A sweep that picks its keys first (a batch, or all of them) and
// deletes them later by key or id, without judging them again, deletes fresh claims.
func checkSweepRacingClaims(e *env) error {
	s, scope, _, err := e.sweepScope()
	if err != nil {
		return err
	}
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	keys := make([]string, sweepRaceKeys)
	for i := range keys {
		keys[i] = e.key()
	}
	const setters = 8
	out, err := e.together(setters, func(w int) (idempotency.Claim, error) {
		for i := w; i < len(keys); i += setters {
			if _, err := e.ownBound(scope, keys[i], msgA, boundA); err != nil {
				return idempotency.Claim{}, err
			}
		}
		return idempotency.Claim{}, nil
	})
	if err := firstErr(out, err); err != nil {
		return err
	}
	e.since(time.Now()).to(e.h.TTL + e.ttlMargin())
	p := idempotency.RetentionPolicy{KeyMaxAge: e.h.TTL, BatchSize: sweepRaceBatch}
	var rep idempotency.PurgeReport
	claimers := racers - 1
	out, err = e.together(racers, func(i int) (idempotency.Claim, error) {
		if i == 0 {
			var err error
			rep, err = s.PurgeExpired(e.ctx, p)
			return idempotency.Claim{}, err
		}
		// Claimer i claims keys i-1, i-1+claimers, ...: spread over the sweep.
		for n, k := 0, i-1; k < len(keys); n, k = n+1, k+claimers {
			time.Sleep(time.Duration((i+3*n)%8) * 40 * time.Microsecond)
			c, err := ixs[i%len(ixs)].Claim(e.ctx, scope, keys[k], msgB, longLease)
			if err != nil {
				return c, fmt.Errorf("Claim of key %d: %w", k+1, err)
			}
			if c.Status != idempotency.Claimed {
				return c, fmt.Errorf("Claim of key %d, past its TTL, racing a sweep = %s; want claimed", k+1, describe(c))
			}
		}
		return idempotency.Claim{}, nil
	})
	if err != nil {
		return err
	}
	for _, o := range out {
		if o.err != nil {
			return fmt.Errorf("racer %d (%s): %w", o.racer, map[bool]string{true: "the sweep", false: "claims"}[o.racer == 0], o.err)
		}
	}
	for i, key := range keys {
		if _, err := e.wantHeld(scope, key, msgB, pending); err != nil {
			return fmt.Errorf("a fresh claim of key %d, made while PurgeExpired(%+v) ran (report %+v): %w", i+1, p, rep, err)
		}
	}
	return nil
}

// firstErr returns err, or the first error of out.
func firstErr(out []outcome, err error) error {
	if err != nil {
		return err
	}
	for _, o := range out {
		if o.err != nil {
			return o.err
		}
	}
	return nil
}
