package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

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

// checkSweepKeepsYoungKeys: PurgeExpired keeps a key younger than the policy's age
// even when it is a pending claim whose lease ended.
func checkSweepKeepsYoungKeys(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
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

// countdown is a context that turns done at its n-th call of Err (or once its parent
// is done): a context that ends in the middle of a sweep.
type countdown struct {
	context.Context
	mu   sync.Mutex
	left int
	done chan struct{}
}

func newCountdown(parent context.Context, n int) *countdown {
	return &countdown{Context: parent, left: n, done: make(chan struct{})}
}

func (c *countdown) Done() <-chan struct{} { return c.done }

func (c *countdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left > 0 {
		c.left--
		if c.left > 0 {
			return c.Context.Err()
		}
		close(c.done)
	}
	return context.Canceled
}

// checkSweepCancelledMidway: a sweep whose context ends between batches returns an
// error wrapping ctx.Err() and a report of exactly what it deleted so far; one whose
// context never ended in time reports a complete sweep.
func checkSweepCancelledMidway(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	scope, u := e.scope(), e.sweepUnit()
	keys, err := e.oldKeys(scope, 6)
	if err != nil {
		return err
	}
	ctx := newCountdown(e.ctx, 3)
	p := idempotency.RetentionPolicy{KeyMaxAge: u, BatchSize: 1}
	rep, err := s.PurgeExpired(ctx, p)
	gone, aerr := e.absent(scope, keys)
	if aerr != nil {
		return aerr
	}
	switch {
	case err == nil && (!rep.Complete || gone != len(keys) || rep.KeysDeleted != int64(gone)):
		return fmt.Errorf("PurgeExpired(%+v) = %+v, nil with %d of %d keys deleted; want a complete report of what it deleted", p, rep, gone, len(keys))
	case err != nil && !errors.Is(err, context.Canceled):
		return fmt.Errorf("PurgeExpired(%+v) with a context that ended midway = %+v, %v; want an error wrapping ctx.Err()", p, rep, err)
	case err != nil && (rep.KeysDeleted != int64(gone) || (rep.Complete && gone != len(keys))):
		return fmt.Errorf("PurgeExpired(%+v) with a context that ended midway = %+v, %v, and %d of %d keys are gone; "+
			"want the report of what it deleted before ctx ended", p, rep, err, gone, len(keys))
	}
	return nil
}

// checkSweepRacingClaims: a sweep runs while racers claim afresh the keys it is
// deleting (keys past their TTL, which count as absent): every claim that won is a
// young pending claim and survives the sweep. A sweep that picks its rows first and
// deletes them later, without judging them again, deletes fresh claims.
func checkSweepRacingClaims(e *env) error {
	s, err := e.sweeper()
	if err != nil {
		return err
	}
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	scope := e.scope()
	const n = racers - 1
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key()
		if _, err := e.ownBound(scope, keys[i], msgA, boundA); err != nil {
			return err
		}
	}
	e.since(time.Now()).to(e.h.TTL + e.ttlMargin())
	p := idempotency.RetentionPolicy{KeyMaxAge: e.h.TTL}
	var rep idempotency.PurgeReport
	out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
		if i == 0 {
			var err error
			rep, err = s.PurgeExpired(e.ctx, p)
			return idempotency.Claim{}, err
		}
		time.Sleep(time.Duration(i%8) * 40 * time.Microsecond) // spread the claims over the sweep
		return ixs[i%len(ixs)].Claim(e.ctx, scope, keys[i-1], msgB, longLease)
	})
	if err != nil {
		return err
	}
	for _, o := range out {
		switch {
		case o.err != nil:
			return fmt.Errorf("racer %d (%s): %w", o.racer, map[bool]string{true: "the sweep", false: "a Claim"}[o.racer == 0], o.err)
		case o.racer > 0 && o.c.Status != idempotency.Claimed:
			return fmt.Errorf("Claim of a key past its TTL, racing a sweep = %s; want claimed", describe(o.c))
		}
	}
	for i, key := range keys {
		if _, err := e.wantHeld(scope, key, msgB, pending); err != nil {
			return fmt.Errorf("a fresh claim of key %d, made while PurgeExpired(%+v) ran (report %+v): %w", i+1, p, rep, err)
		}
	}
	return nil
}
