package conformance

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/a2akit/idempotency"
)

// extendTrials is how many claims ExtendRacingTakeover races an extension and
// takeovers on, with extendRacers goroutines each on the controllable clock.
const (
	extendTrials = 16
	extendRacers = 12
)

// checkExtendRacingTakeover: the owner of a claim extends it just as its lease ends,
// while retries through both handles try to take it over, over many claims. Either the
// extension took effect first (Extend succeeds, no retry takes over, and the owner
// still binds) or a takeover did (Extend gets ErrNotOwner, exactly one retry took over,
// and only its token binds); never both. When neither happened (the retries came
// before the end, the extension after it), a retry afterwards takes over. On the
// controllable clock a racer moves the clock over the lease's end during the race; on
// the real clock the racers are timed around it. An Extend that checks the claim and
// writes the lease in two steps extends a claim that a retry just took over.
func checkExtendRacingTakeover(e *env) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	if !e.clock() {
		return e.extendRaceRealClock(ixs)
	}
	const tick = time.Millisecond
	for trial := range extendTrials {
		key := e.key()
		tok, err := e.own("", key, msgA, clockLease)
		if err != nil {
			return err
		}
		e.h.Advance(clockLease - tick)
		out, err := e.together(extendRacers, func(i int) (idempotency.Claim, error) {
			switch i {
			case 0:
				time.Sleep(time.Duration(trial%4) * 30 * time.Microsecond)
				e.h.Advance(tick) // the lease ends now
				return idempotency.Claim{}, nil
			case 1:
				return idempotency.Claim{}, ixs[0].Extend(e.ctx, "", key, tok, clockLease)
			}
			time.Sleep(time.Duration(i%8) * 25 * time.Microsecond)
			return ixs[i%len(ixs)].Claim(e.ctx, "", key, msgA, clockLease)
		})
		if err != nil {
			return err
		}
		byRacer(out)
		if err := e.judgeExtendRace(fmt.Sprintf("trial %d", trial+1), key, tok, out, 1); err != nil {
			return err
		}
		e.h.Advance(clockLease) // past whatever lease the trial left
	}
	return nil
}

// extendRaceRealClock is ExtendRacingTakeover on the real clock: all claims at once,
// and for each an Extend and racers-2 retries spread over a few milliseconds around
// the end of its lease.
func (e *env) extendRaceRealClock(ixs []idempotency.KeyIndex) error {
	lease := e.lease()
	keys := make([]string, extendTrials)
	toks := make([]idempotency.Token, extendTrials)
	ends := make([]time.Time, extendTrials) // about when each lease ends
	for i := range keys {
		keys[i] = e.key()
		tok, err := e.own("", keys[i], msgA, lease)
		if err != nil {
			return err
		}
		toks[i], ends[i] = tok, time.Now().Add(lease)
	}
	const per = 6 // an Extend and five retries per key
	out, err := e.together(extendTrials*per, func(i int) (idempotency.Claim, error) {
		k, r := i/per, i%per
		if r == 0 {
			time.Sleep(time.Until(ends[k].Add(time.Duration(k%5-2) * 500 * time.Microsecond)))
			return idempotency.Claim{}, ixs[k%len(ixs)].Extend(e.ctx, "", keys[k], toks[k], lease)
		}
		time.Sleep(time.Until(ends[k].Add(time.Duration(r+k%3-3) * 750 * time.Microsecond)))
		return ixs[(k+r)%len(ixs)].Claim(e.ctx, "", keys[k], msgA, longLease)
	})
	if err != nil {
		return err
	}
	byRacer(out)
	for k, key := range keys {
		if err := e.judgeExtendRace(fmt.Sprintf("key %d", k+1), key, toks[k], out[k*per:(k+1)*per], 0); err != nil {
			return err
		}
	}
	return nil
}

// byRacer puts out in the order of the racers.
func byRacer(out []outcome) {
	slices.SortFunc(out, func(a, b outcome) int { return a.racer - b.racer })
}

// judgeExtendRace judges the outcomes of one key's race: out[ext] is the Extend by
// the owner of tok, the others are retries, but for out[0] when ext is 1 (the racer
// that moved the clock).
func (e *env) judgeExtendRace(what, key string, tok idempotency.Token, out []outcome, ext int) error {
	extErr := out[ext].err
	var winners []outcome
	for i, o := range out {
		switch {
		case i == ext || (ext == 1 && i == 0):
		case o.err != nil:
			return fmt.Errorf("%s: a retry racing an Extend: Claim: %w", what, o.err)
		case o.c.Status == idempotency.Claimed:
			winners = append(winners, o)
		}
	}
	switch {
	case len(winners) > 1:
		return fmt.Errorf("%s: %d retries racing an Extend took one claim over; want at most one", what, len(winners))
	case extErr != nil && !errors.Is(extErr, idempotency.ErrNotOwner):
		return fmt.Errorf("%s: Extend racing a takeover = %v; want nil or ErrNotOwner", what, extErr)
	case extErr == nil && len(winners) == 1:
		return fmt.Errorf("%s: the owner's Extend succeeded and a retry took the claim over (token %d); want one or the other "+
			"(judge the token and the lease and write the new lease in one atomic step)", what, winners[0].c.Token)
	case extErr == nil:
		if err := e.bind("", key, tok, boundA); err != nil {
			return fmt.Errorf("%s: the owner, whose Extend won the race: %w", what, err)
		}
		return nil
	case len(winners) == 1:
		err := e.ix.Bind(e.ctx, "", key, tok, boundB)
		if err := wantErr(what+": Bind by the owner whose Extend lost the race to a takeover", err, idempotency.ErrNotOwner); err != nil {
			return err
		}
		return e.bind("", key, winners[0].c.Token, boundA)
	}
	// Neither: the lease ended unextended; a retry now takes over.
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return fmt.Errorf("%s: after an Extend that came too late and retries that came too early: %w", what, err)
	}
	return nil
}
