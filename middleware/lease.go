package middleware

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// A claim's lease holds while its first attempt lives and ends soon after it dies:
// from claim to bind (or release, or the forward's return) the engine extends it with
// [idempotency.KeyIndex.Extend], every third of the lease with ±10 % jitter, so that
// two extensions may fail or come late before it ends; a retry in another process
// sees a running lease and waits. When the owner dies, nothing extends it, and the
// next identical send takes the claim over once it ends. Within this process, the
// live forwards also keep retries from taking a claim over: the engine knows that
// attempt is alive even when an extension failed.

// renewEvery returns the delay before the next extension of a lease of length lease.
func renewEvery(lease time.Duration) time.Duration {
	third := lease / 3
	return third - third/10 + rand.N(third/5+1)
}

// leaseKeeper extends the lease of one claim until it is stopped. It runs on a timer,
// not a goroutine of its own, between extensions; a send that ends before its first
// extension costs one timer, armed and stopped.
type leaseKeeper struct {
	c    core
	send *Send
	cs   *ClaimedSend
	// tick is lk.extend, made once, for the timer.
	tick func()

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// keepLease starts extending the lease of cs, the claim of send, first after the
// delay first, and returns its keeper. An extension that fails (the index is
// unavailable) is tried again after a tenth of the lease; one refused with
// ErrNotOwner (the lease ended before it, and a retry elsewhere may have taken the
// claim over) ends the keeping, and is logged.
func (c core) keepLease(send *Send, cs *ClaimedSend, first time.Duration) *leaseKeeper {
	lk := &leaseKeeper{c: c, send: send, cs: cs}
	lk.tick = lk.extend
	lk.schedule(first)
	return lk
}

// extend extends the lease once, and schedules the next extension.
func (lk *leaseKeeper) extend() {
	c, send, cs := lk.c, lk.send, lk.cs
	defer c.recoverTo(send, "extending a claim's lease")
	if _, bound := cs.state(); bound {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(c.indexTimeout, c.lease/3))
	err := c.index.Extend(ctx, send.k.scope, send.k.key, cs.Token(), c.lease)
	cancel()
	next := renewEvery(c.lease)
	switch {
	case err == nil:
	case errors.Is(err, idempotency.ErrNotOwner):
		if _, bound := cs.state(); !bound && !lk.isStopped() {
			c.logSend(context.Background(), send, slog.LevelWarn, "idempotency: the lease of a keyed send still "+
				"running ended before it could be extended; a retry may take its claim over (raise Lease or "+
				"IndexTimeout, or check the index's latency)", slog.Any("error", err))
		}
		return
	default:
		c.logSend(context.Background(), send, slog.LevelWarn, "idempotency: extending the lease of a keyed send "+
			"still running failed; trying again", slog.Any("error", err))
		next = c.lease / 10
	}
	lk.schedule(next)
}

// rebind binds cs, the claim of send, to b in the background, after binding it
// failed for want of the index: the forward produced b, so its key must not be left
// to its lease, whose end would let a retry run the send again although this process
// knows what it produced. Until the key is bound, fenced out (ErrNotOwner: the
// lease ended and a retry may have taken the claim over) or ForwardTimeout has
// passed, the rebind keeps the lease extended (the first extension at once, since
// the forward's keeper stops) and counts the forward as alive in this process, so
// that retries here wait instead of taking the claim over. It tries again after
// growing delays, from a tenth of the lease (at most 100 ms) up to a third of it (at
// most 5 s).
func (c core) rebind(send *Send, cs *ClaimedSend, b idempotency.Binding) {
	leave := c.live.add(send.k.waitKey())
	keep := c.keepLease(send, cs, 0)
	go func() {
		defer leave()
		defer keep.stop()
		defer c.recoverTo(send, "binding a key again")
		deadline := time.Now().Add(c.forwardTimeout)
		wait := max(min(c.lease/10, 100*time.Millisecond), time.Millisecond)
		for tries := 1; ; tries++ {
			time.Sleep(min(wait, max(time.Until(deadline), 0)))
			err := cs.bind(context.Background(), b, false)
			switch {
			case err == nil:
				c.logSend(context.Background(), send, slog.LevelInfo, "idempotency: key bound once the index answered again",
					slog.Int("tries", tries))
				return
			case errors.Is(err, idempotency.ErrAlreadyBound):
				return // bound meanwhile, to another value: that binding stands
			case !bytes.Equal(b.Reply, unreplayableReply) &&
				(errors.Is(err, idempotency.ErrInvalidArgument) || errors.Is(err, idempotency.ErrFull)):
				// The index answers again, and refuses to store b: the marker, as settle binds.
				b = idempotency.Binding{Reply: unreplayableReply}
				continue
			case errors.Is(err, idempotency.ErrNotOwner):
				c.logSend(context.Background(), send, slog.LevelError, "idempotency: could not bind the key before its lease "+
					"ended; a retry may have taken the claim over (raise Lease or IndexTimeout)", slog.Any("error", err))
				return
			case !time.Now().Before(deadline):
				c.logSend(context.Background(), send, slog.LevelError, "idempotency: could not bind the key within "+
					"ForwardTimeout; it stays pending until its lease ends", slog.Int("tries", tries), slog.Any("error", err))
				return
			}
			wait = min(2*wait, c.lease/3, 5*time.Second)
		}
	}()
}

// schedule runs the next extension after d, unless the keeper is stopped. The
// first call arms the keeper's timer; later ones (from the extension the timer ran)
// reset it.
func (lk *leaseKeeper) schedule(d time.Duration) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	switch {
	case lk.stopped:
	case lk.timer == nil:
		lk.timer = time.AfterFunc(d, lk.tick)
	default:
		lk.timer.Reset(d)
	}
}

// stop ends the keeping; an extension under way finishes. A nil keeper does nothing.
func (lk *leaseKeeper) stop() {
	if lk == nil {
		return
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	lk.stopped = true
	if lk.timer != nil {
		lk.timer.Stop()
	}
}

func (lk *leaseKeeper) isStopped() bool {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.stopped
}

// liveForwards counts, by key, the forwards of this process that hold a claim and
// have not returned.
type liveForwards struct {
	mu sync.Mutex
	n  map[waitKey]int
}

// add records a live forward of k; call the function it returns when it is over.
func (l *liveForwards) add(k waitKey) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = make(map[waitKey]int)
	}
	l.n[k]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[k]--; l.n[k] <= 0 {
			delete(l.n, k)
		}
	}
}

// has reports whether a forward of k is live in this process.
func (l *liveForwards) has(k waitKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[k] > 0
}

// recoverTo recovers a panic in a goroutine of the engine's own (a timer's, an inner
// request's), so that nothing the kit does on a send's behalf can crash the process,
// and logs it with what the goroutine was doing.
func (c core) recoverTo(send *Send, doing string) {
	if v := recover(); v != nil {
		c.logSend(context.Background(), send, slog.LevelError, "idempotency: recovered from a panic while "+doing,
			slog.Any("panic", v))
	}
}
