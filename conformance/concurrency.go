package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// The size of the concurrency checks: racers goroutines claim one key at once, over
// rounds keys.
const (
	racers      = 32
	rounds      = 50
	raceTimeout = time.Minute

	// raceKeys is the number of keys the races of Bind, Release and Lookup run on.
	raceKeys = 8
)

// An outcome is what one racing Claim returned.
type outcome struct {
	racer int
	c     idempotency.Claim
	err   error
}

// together runs claim(i) for i in [0, n) on n goroutines released at once, and returns
// the outcomes. The goroutines only report on a buffered channel; this goroutine
// judges. When some Claims do not return within raceTimeout (a deadlock), together
// returns an error and leaves them behind.
func (e *env) together(n int, claim func(i int) (idempotency.Claim, error)) ([]outcome, error) {
	start := make(chan struct{})
	results := make(chan outcome, n)
	for i := range n {
		go func() {
			<-start
			c, err := claim(i)
			results <- outcome{racer: i, c: c, err: err}
		}()
	}
	close(start)
	timeout := time.NewTimer(raceTimeout)
	defer timeout.Stop()
	out := make([]outcome, 0, n)
	for len(out) < n {
		select {
		case o := <-results:
			out = append(out, o)
		case <-timeout.C:
			return out, fmt.Errorf("%d of %d concurrent Claims did not return within %v (a deadlock?)", n-len(out), n, raceTimeout)
		}
	}
	return out, nil
}

// oneWinner checks that exactly one outcome is Claimed, with a non-zero token, and
// that every other one satisfies loser. It returns the winner.
func oneWinner(what string, out []outcome, loser func(o outcome) bool, want string) (outcome, error) {
	var winners []outcome
	for _, o := range out {
		switch {
		case o.err != nil:
			return outcome{}, fmt.Errorf("%s: racer %d: Claim: %w", what, o.racer, o.err)
		case o.c.Status == idempotency.Claimed:
			winners = append(winners, o)
		case !loser(o):
			return outcome{}, fmt.Errorf("%s: racer %d: Claim = %s; want claimed for exactly one racer and %s for the others",
				what, o.racer, describe(o.c), want)
		}
	}
	if len(winners) != 1 {
		return outcome{}, fmt.Errorf("%s: %d of %d concurrent Claims returned claimed; want exactly one", what, len(winners), len(out))
	}
	if winners[0].c.Token == 0 {
		return outcome{}, fmt.Errorf("%s: the winning Claim = %s; want a non-zero token", what, describe(winners[0].c))
	}
	return winners[0], nil
}

// sameMessageLoser reports whether o is HeldBySameMessage, pending, for msg.
func sameMessageLoser(msg string) func(o outcome) bool {
	return func(o outcome) bool {
		return o.c.Status == idempotency.HeldBySameMessage && o.c.Token == 0 &&
			o.c.Record.MessageID == msg && carries(o.c.Record, pending)
	}
}

// sameMessageRace has racers goroutines claim key for msgA at once, through ixs in
// turn, and checks that exactly one is Claimed and the others HeldBySameMessage
// (pending). It returns the winner; what names the race in errors.
func (e *env) sameMessageRace(what, key string, ixs ...idempotency.KeyIndex) (outcome, error) {
	out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
		return ixs[i%len(ixs)].Claim(e.ctx, "", key, msgA, longLease)
	})
	if err != nil {
		return outcome{}, err
	}
	return oneWinner(what, out, sameMessageLoser(msgA), "held by same message (pending)")
}

// checkExactlyOneWinner: racers goroutines claim one free key for the same message at
// once, over rounds keys: exactly one Claim per key returns Claimed, the others
// HeldBySameMessage (pending), and the winner's token binds.
func checkExactlyOneWinner(e *env) error {
	for round := range rounds {
		key := e.key()
		what := fmt.Sprintf("key %d of %d", round+1, rounds)
		w, err := e.sameMessageRace(what, key, e.ix)
		if err != nil {
			return err
		}
		if err := e.bind("", key, w.c.Token, boundA); err != nil {
			return fmt.Errorf("%s: by the winner: %w", what, err)
		}
	}
	return nil
}

// checkExactlyOneWinnerOtherMessages: racers goroutines claim one free key, each for
// its own message: exactly one returns Claimed, the others HeldByOtherMessage with an
// empty Record, and the key is held by the winner's message.
func checkExactlyOneWinnerOtherMessages(e *env) error {
	msg := func(i int) string { return fmt.Sprintf("conformance-message-%d", i) }
	for round := range rounds / 2 {
		key := e.key()
		out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
			return e.ix.Claim(e.ctx, "", key, msg(i), longLease)
		})
		if err != nil {
			return err
		}
		what := fmt.Sprintf("key %d of %d", round+1, rounds/2)
		w, err := oneWinner(what, out, func(o outcome) bool {
			return o.c.Status == idempotency.HeldByOtherMessage && o.c.Token == 0 && emptyRecord(o.c.Record)
		}, "held by other message (empty Record)")
		if err != nil {
			return err
		}
		if _, err := e.wantHeld("", key, msg(w.racer), pending); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// checkExactlyOneTakeover: when the lease of a pending claim has ended, racers
// retries of the same message at once take it over exactly once: one Claimed, with a
// new token, the others HeldBySameMessage.
func checkExactlyOneTakeover(e *env) error {
	const n = 10
	keys, toks, err := e.abandon("", n)
	if err != nil {
		return err
	}
	for i, key := range keys {
		old := toks[i]
		what := fmt.Sprintf("takeover of key %d of %d", i+1, n)
		w, err := e.sameMessageRace(what, key, e.ix)
		if err != nil {
			return err
		}
		if w.c.Token == old {
			return fmt.Errorf("%s: the takeover returned the old token %d; want a new one", what, old)
		}
	}
	return nil
}

// openHandle opens the harness's second handle.
func (e *env) openHandle() (idempotency.KeyIndex, error) {
	ix, err := e.h.OpenHandle()
	if err != nil {
		return nil, fmt.Errorf("Harness.OpenHandle: %w", err)
	}
	if ix == nil {
		return nil, fmt.Errorf("Harness.OpenHandle returned a nil index")
	}
	return ix, nil
}

// checkExactlyOneWinnerTwoHandles: as ExactlyOneWinner, with the racers split between
// two handles on the same storage; the winner's token then binds through the other
// handle, and both handles see the task.
func checkExactlyOneWinnerTwoHandles(e *env) error {
	other, err := e.openHandle()
	if err != nil {
		return err
	}
	handles := [2]idempotency.KeyIndex{e.ix, other}
	for round := range rounds {
		key := e.key()
		what := fmt.Sprintf("key %d of %d, two handles", round+1, rounds)
		w, err := e.sameMessageRace(what, key, handles[:]...)
		if err != nil {
			return err
		}
		if err := e.bindOn(handles[(w.racer+1)%2], "", key, w.c.Token, boundA); err != nil {
			return fmt.Errorf("%s: through the handle the winner did not claim on: %w", what, err)
		}
		for h, ix := range handles {
			if _, err := e.wantHeldOn(ix, "", key, msgA, boundA); err != nil {
				return fmt.Errorf("%s: handle %d: %w", what, h+1, err)
			}
		}
	}
	return nil
}

// checkTakeoverFencedAcrossHandles: a claim made through one handle and abandoned is
// taken over through another, as when a process crashed and another serves the
// retry; the first handle's late Bind and Release with the old token are then
// refused with ErrNotOwner.
func checkTakeoverFencedAcrossHandles(e *env) error {
	other, err := e.openHandle()
	if err != nil {
		return err
	}
	key, lease := e.key(), e.lease()
	start := time.Now()
	old, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
	tok, err := e.ownOn(other, "", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("takeover through the second handle: %w", err)
	}
	if tok == old {
		return fmt.Errorf("takeover through the second handle returned the old token %d; want a new one", tok)
	}
	if err := e.wantFenced(key, old, "the old token, late, through the first handle"); err != nil {
		return err
	}
	if err := e.bindOn(other, "", key, tok, boundA); err != nil {
		return fmt.Errorf("by the new owner through the second handle: %w", err)
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
}

// handles returns the index and, when the harness offers one, a second handle on the
// same storage; racers alternate between them.
func (e *env) handles() ([]idempotency.KeyIndex, error) {
	if e.h.OpenHandle == nil {
		return []idempotency.KeyIndex{e.ix}, nil
	}
	other, err := e.openHandle()
	if err != nil {
		return nil, err
	}
	return []idempotency.KeyIndex{e.ix, other}, nil
}

// checkConcurrentBinds: racers bind one pending key at once with the owner's token,
// half to one task and half to another, over several keys and across both handles when
// the harness offers two: every Bind that succeeds bound what the key ends up bound
// to, and the others get ErrAlreadyBound.
func checkConcurrentBinds(e *env) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	bindings := []idempotency.Binding{boundA, boundB, repliedA, bothA}
	for round := range raceKeys {
		key, tok, err := e.claimed()
		if err != nil {
			return err
		}
		out, err := e.together(racers, func(i int) (idempotency.Claim, error) {
			return idempotency.Claim{}, ixs[i%len(ixs)].Bind(e.ctx, "", key, tok, bindings[i%len(bindings)])
		})
		if err != nil {
			return err
		}
		r, ok, err := e.ix.Lookup(e.ctx, "", key)
		if err != nil || !ok || r.Pending() {
			return fmt.Errorf("key %d: Lookup after concurrent Binds = %s, %t, %v; want the key bound", round+1, describeRecord(r), ok, err)
		}
		for _, o := range out {
			b := bindings[o.racer%len(bindings)]
			part := (b.TaskID == "" || b.TaskID == r.TaskID) && (b.Reply == nil || bytes.Equal(b.Reply, r.Reply))
			exact := b.TaskID == r.TaskID && bytes.Equal(b.Reply, r.Reply)
			switch {
			case o.err == nil && !part:
				return fmt.Errorf("key %d: concurrent Binds: Bind(%s) succeeded but the key is bound to %s; "+
					"want one binding to win and the conflicting ones to get ErrAlreadyBound (check and write in one atomic step)",
					round+1, describeBinding(b), describeRecord(r))
			case o.err != nil && !errors.Is(o.err, idempotency.ErrAlreadyBound):
				return fmt.Errorf("key %d: concurrent Binds: Bind(%s) = %v; want nil or ErrAlreadyBound", round+1, describeBinding(b), o.err)
			case o.err != nil && exact:
				return fmt.Errorf("key %d: concurrent Binds: Bind(%s) = %v, yet the key is bound to exactly that; want nil",
					round+1, describeBinding(b), o.err)
			}
		}
	}
	return nil
}
