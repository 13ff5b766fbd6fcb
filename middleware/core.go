package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/a2akit/idempotency"
)

// core is what one keyed send needs from the middleware: the index, the options it
// reads and the wrapped handler. It is passed by value; every send of one New shares
// what its pointers point to (the notifier, the logger).
//
// Its decision logic (decide, release, lookup) takes a context and a claimKey, never
// an *http.Request, so that a binding that is not HTTP can reuse it.
type core struct {
	index        idempotency.KeyIndex
	lease        time.Duration
	soleInstance bool
	replayWait   time.Duration
	indexTimeout time.Duration
	log          *slog.Logger
	observe      func(Event)
	tasks        TaskSource
	waiters      *notifier
	// live counts this process's forwards by key; forwardTimeout bounds one after its
	// client left.
	live           *liveForwards
	forwardTimeout time.Duration
	early          *earlyBinder
	next           http.Handler
}

// claimKey names a keyed send in the index: its scope, its key, and the message that
// holds the key.
type claimKey struct {
	scope, key, messageID string
}

// waitKey returns the name under which the retries waiting for k are woken.
func (k claimKey) waitKey() waitKey { return waitKey{k.scope, k.key} }

// maxClaims bounds the claims of one keyed send: a retry claims again when the first
// attempt released the key or its lease ended while the retry waited.
const maxClaims = 3

// decisionKind is what the core decided to do with a keyed send.
type decisionKind int

const (
	decideForward     decisionKind = iota // claimed: forward it, then bind or release
	decideReplay                          // bound by the first attempt: replay it
	decideConflict                        // held by another message: refuse it
	decideInFlight                        // the first attempt bound nothing in time: 409
	decideUnavailable                     // the index failed: 503
	decideGone                            // the client went away while it waited
)

// timing is the time one keyed send spent in the kit apart from the wrapped
// handler: in calls to the index, waiting for an in-flight first attempt, and
// reading the task a retry is answered with.
type timing struct {
	index, wait, replay time.Duration
}

// since adds the time since start to *d.
func since(d *time.Duration, start time.Time) { *d += time.Since(start) }

// decision is the core's decision on a keyed send.
type decision struct {
	kind  decisionKind
	token idempotency.Token  // decideForward: the claim's fencing token
	rec   idempotency.Record // decideReplay, decideInFlight: the key's record
	op    string             // decideUnavailable: the index call that failed
	err   error              // decideUnavailable: its error
}

// decide claims k and, when a first attempt holds it, waits up to ReplayWait for it
// to bind, polling the index with growing intervals and woken at once when this
// process binds or releases the key. ctx is the client's: when it ends while the
// retry waits, the decision is decideGone. It adds the time it spent to t.
func (c core) decide(ctx context.Context, k claimKey, t *timing) decision {
	deadline := time.Now().Add(c.replayWait)
	for claims := 1; ; claims++ {
		cl, err := c.claimUnlessLive(ctx, k, t)
		if err != nil {
			return decision{kind: decideUnavailable, op: "claim", err: err}
		}
		switch cl.Status {
		case idempotency.Claimed:
			return decision{kind: decideForward, token: cl.Token}
		case idempotency.HeldByOtherMessage:
			return decision{kind: decideConflict}
		case idempotency.HeldBySameMessage:
		default:
			return decision{kind: decideUnavailable, op: "claim", err: fmt.Errorf("index returned claim status %v", cl.Status)}
		}
		if !cl.Record.Pending() {
			return decision{kind: decideReplay, rec: cl.Record}
		}
		d := c.await(ctx, k, cl.Record, deadline, t)
		if d.kind == decideForward { // free again, or its lease ended: claim again
			if claims < maxClaims {
				continue
			}
			d.kind = decideInFlight
		}
		return d
	}
}

// claimUnlessLive claims k, unless a forward of k is live in this process: a claim
// made after that forward's lease ended would take it over, so its record is read
// instead, as a claim that found the key held reads it.
func (c core) claimUnlessLive(ctx context.Context, k claimKey, t *timing) (idempotency.Claim, error) {
	if !c.live.has(k.waitKey()) {
		return c.claim(ctx, k, t)
	}
	rec, found, err := c.lookup(ctx, k, t)
	switch {
	case err != nil:
		return idempotency.Claim{}, err
	case !found:
		return c.claim(ctx, k, t)
	case rec.MessageID != k.messageID:
		return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
	}
	return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: rec}, nil
}

func (c core) claim(ctx context.Context, k claimKey, t *timing) (idempotency.Claim, error) {
	ctx, cancel := c.indexContext(ctx, false)
	defer cancel()
	defer since(&t.index, time.Now())
	return c.index.Claim(ctx, k.scope, k.key, k.messageID, c.lease)
}

// await waits until deadline for the first attempt holding k (its record rec) to bind
// it. A decideForward answer means the key may be claimed again.
func (c core) await(ctx context.Context, k claimKey, rec idempotency.Record, deadline time.Time, t *timing) decision {
	interval := 5 * time.Millisecond
	for {
		now := time.Now()
		if !rec.LeaseExpiresAt.IsZero() && !now.Before(rec.LeaseExpiresAt) && !c.live.has(k.waitKey()) {
			// (A forward of this process is alive: it renews its lease.)
			return decision{kind: decideForward, rec: rec}
		}
		if !now.Before(deadline) {
			return decision{kind: decideInFlight, rec: rec}
		}
		woken, leave := c.waiters.join(k.waitKey())
		timer := time.NewTimer(min(interval, deadline.Sub(now)))
		select {
		case <-woken:
		case <-timer.C:
		case <-ctx.Done():
			leave()
			timer.Stop()
			since(&t.wait, now)
			return decision{kind: decideGone, rec: rec}
		}
		leave()
		timer.Stop()
		since(&t.wait, now)
		interval = min(2*interval, 250*time.Millisecond)

		got, found, err := c.lookup(ctx, k, t)
		switch {
		case err != nil:
			return decision{kind: decideUnavailable, op: "lookup", err: err}
		case !found:
			return decision{kind: decideForward, rec: rec}
		case got.MessageID != k.messageID:
			return decision{kind: decideConflict}
		case !got.Pending():
			return decision{kind: decideReplay, rec: got}
		}
		rec = got
	}
}

// lookup reads k's record.
func (c core) lookup(ctx context.Context, k claimKey, t *timing) (idempotency.Record, bool, error) {
	ctx, cancel := c.indexContext(ctx, false)
	defer cancel()
	defer since(&t.index, time.Now())
	return c.index.Lookup(ctx, k.scope, k.key)
}

// release releases the claim token holds on k, even when ctx has ended (the client
// left), and wakes the retries waiting for it.
func (c core) release(ctx context.Context, k claimKey, token idempotency.Token, t *timing) error {
	ctx, cancel := c.indexContext(ctx, true)
	defer cancel()
	start := time.Now()
	err := c.index.Release(ctx, k.scope, k.key, token)
	since(&t.index, start)
	c.waiters.notify(k.waitKey())
	return err
}

// newClaim returns the handle of the claim token on send's key, bounded and
// notifying as the middleware's own index calls are.
func (c core) newClaim(send *Send, token idempotency.Token) *ClaimedSend {
	k := send.k
	return &ClaimedSend{index: c.index, scope: k.scope, key: k.key, messageID: k.messageID, token: token,
		waiters: c.waiters, timeout: c.indexTimeout, requestID: send.RequestID}
}

// indexContext bounds an index call made within ctx. Calls after the wrapped handler
// ran (bind, release) must happen even when the client has gone, so they use
// detached.
func (c core) indexContext(ctx context.Context, detached bool) (context.Context, context.CancelFunc) {
	if detached {
		ctx = context.WithoutCancel(ctx)
	}
	return context.WithTimeout(ctx, c.indexTimeout)
}
