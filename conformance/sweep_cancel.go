package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/a2akit/idempotency"
)

// checkSweepCancelled: PurgeExpired with a cancelled context returns the context's
// error and deletes no more than it reports.
func checkSweepCancelled(e *env) error {
	s, scope, u, keys, err := e.oldSweep(3)
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
	s, scope, u, keys, err := e.oldSweep(6)
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

// endsAtFirstLook is a context that ends as soon as it is first looked at: its first
// Err answers nil (the context was live when asked), and from then on Err answers
// context.Canceled and Done is closed; a first call of Done finds it ended already.
// To a sweep that checks its context before or after every batch, the context ends
// between its first two batches at the latest.
type endsAtFirstLook struct {
	context.Context
	mu    sync.Mutex
	ended bool
	done  chan struct{}
}

func newEndsAtFirstLook(parent context.Context) *endsAtFirstLook {
	return &endsAtFirstLook{Context: parent, done: make(chan struct{})}
}

// end ends the context, and reports whether it was live until this call.
func (c *endsAtFirstLook) end() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.ended = true
	close(c.done)
	return true
}

func (c *endsAtFirstLook) Done() <-chan struct{} {
	c.end()
	return c.done
}

func (c *endsAtFirstLook) Err() error {
	if c.end() {
		return nil
	}
	return context.Canceled
}

// checkSweepCancelledBetweenBatches: a sweep checks its context between every two
// batches: with a context that ends right after the sweep first looks at it, and six
// keys to delete one per batch, it stops within a batch of that look, returns an
// error wrapping ctx.Err() and reports exactly what it deleted. A sweep that checks
// its context only before the first batch deletes them all.
func checkSweepCancelledBetweenBatches(e *env) error {
	s, scope, u, keys, err := e.oldSweep(6)
	if err != nil {
		return err
	}
	p := idempotency.RetentionPolicy{KeyMaxAge: u, BatchSize: 1}
	rep, err := s.PurgeExpired(newEndsAtFirstLook(e.ctx), p)
	gone, aerr := e.absent(scope, keys)
	if aerr != nil {
		return aerr
	}
	switch {
	case err == nil || !errors.Is(err, context.Canceled):
		return fmt.Errorf("PurgeExpired(%+v) with a context that ended right after the sweep first checked it = %+v, %v, "+
			"%d of %d keys deleted; want it to stop within one batch, with an error wrapping ctx.Err() (check ctx between every batch)",
			p, rep, err, gone, len(keys))
	case rep.KeysDeleted != int64(gone) || gone > 2 || rep.Complete:
		return fmt.Errorf("PurgeExpired(%+v) with a context that ended right after the sweep first checked it = %+v, %v, "+
			"and %d of %d keys are gone; want at most two batches and the report of what it deleted", p, rep, err, gone, len(keys))
	}
	return nil
}
