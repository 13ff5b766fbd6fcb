package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// racingTakeover claims keys with a lease, lets it end, and for each races a late
// call by the old owner (late(ix, key, old)) against racers-1 retries of the same
// message, which try to take the claim over; judge says whether the outcomes are
// consistent, given the late call's error and the takeover's winner (nil when none).
func (e *env) racingTakeover(name string, late func(ix idempotency.KeyIndex, key string, tok idempotency.Token) error,
	judge func(key string, lateErr error, winner *outcome) error) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	keys, toks, err := e.abandon("", raceKeys)
	if err != nil {
		return err
	}
	for k, key := range keys {
		old := toks[k]
		out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
			if i == 0 {
				return idempotency.Claim{}, late(ixs[0], key, old)
			}
			// Retries arrive spread over a few hundred microseconds, as they do, so
			// that some land while the late call is under way.
			time.Sleep(time.Duration(i%8) * 40 * time.Microsecond)
			return ixs[i%len(ixs)].Claim(e.ctx, "", key, msgA, longLease)
		})
		if err != nil {
			return err
		}
		var lateErr error
		var winners []outcome
		for _, o := range out {
			switch {
			case o.racer == 0:
				lateErr = o.err
			case o.err != nil:
				return fmt.Errorf("%s: racer %d: Claim: %w", name, o.racer, o.err)
			case o.c.Status == idempotency.Claimed:
				winners = append(winners, o)
			}
		}
		if len(winners) > 1 {
			return fmt.Errorf("%s: %d concurrent retries took one claim over; want at most one", name, len(winners))
		}
		var w *outcome
		if len(winners) == 1 {
			w = &winners[0]
		}
		if err := judge(key, lateErr, w); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// checkBindRacingTakeover: the old owner of an abandoned claim binds it late while
// retries take it over: either the Bind came first (it succeeds, and no retry takes
// over) or the takeover did (the Bind gets ErrNotOwner, and the new owner binds).
// Never both: a Bind that checks the token and writes in two steps lets the old owner
// bind a claim someone else now runs.
func checkBindRacingTakeover(e *env) error {
	return e.racingTakeover("late Bind racing a takeover",
		func(ix idempotency.KeyIndex, key string, tok idempotency.Token) error {
			return ix.Bind(e.ctx, "", key, tok, boundA)
		},
		func(key string, lateErr error, w *outcome) error {
			switch {
			case lateErr == nil && w != nil:
				return fmt.Errorf("the old owner's Bind succeeded and a retry took the claim over (token %d); want one or the other", w.c.Token)
			case lateErr == nil:
				_, err := e.wantHeld("", key, msgA, boundA)
				return err
			case !errors.Is(lateErr, idempotency.ErrNotOwner):
				return fmt.Errorf("the old owner's Bind = %v; want nil or ErrNotOwner", lateErr)
			case w == nil:
				return fmt.Errorf("the old owner's Bind was refused, yet no retry took the claim over")
			}
			return e.bind("", key, w.c.Token, boundB)
		})
}

// checkReleaseRacingTakeover: the old owner of an abandoned claim releases it late
// while retries take it over: whichever came first, exactly one retry ends up owning
// the key, and its token binds. A Release that checks the token and deletes in two
// steps deletes the new owner's claim.
func checkReleaseRacingTakeover(e *env) error {
	return e.racingTakeover("late Release racing a takeover",
		func(ix idempotency.KeyIndex, key string, tok idempotency.Token) error {
			return ix.Release(e.ctx, "", key, tok)
		},
		func(key string, lateErr error, w *outcome) error {
			switch {
			case lateErr != nil && !errors.Is(lateErr, idempotency.ErrNotOwner):
				return fmt.Errorf("the old owner's Release = %v; want nil or ErrNotOwner", lateErr)
			case w == nil:
				return fmt.Errorf("no retry owns the key after the old owner's Release (%v); want exactly one", lateErr)
			}
			if err := e.bind("", key, w.c.Token, boundB); err != nil {
				return fmt.Errorf("the retry that won (after the old owner's Release returned %v): %w", lateErr, err)
			}
			return nil
		})
}

// checkLookupsSeeWholeBindings: Lookups racing Binds of a task and a reply at once
// see the key pending or bound to both, never half bound.
func checkLookupsSeeWholeBindings(e *env) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	for round := range raceKeys {
		key, tok, err := e.claimed()
		if err != nil {
			return err
		}
		out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
			ix := ixs[i%len(ixs)]
			if i == 0 {
				return idempotency.Claim{}, ix.Bind(e.ctx, "", key, tok, bothA)
			}
			for range 5 {
				r, ok, err := ix.Lookup(e.ctx, "", key)
				if err != nil {
					return idempotency.Claim{}, err
				}
				if !ok || r.MessageID != msgA || !(carries(r, pending) || carries(r, bothA)) {
					return idempotency.Claim{}, fmt.Errorf("Lookup racing a Bind of %s = %s, %t; want the key pending or bound to both",
						describeBinding(bothA), describeRecord(r), ok)
				}
			}
			return idempotency.Claim{}, nil
		})
		if err != nil {
			return err
		}
		for _, o := range out {
			if o.err != nil {
				return fmt.Errorf("key %d: racer %d: %w", round+1, o.racer, o.err)
			}
		}
	}
	return nil
}
