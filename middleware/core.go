package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// core is the engine's state: the index, the options it reads, and what the sends of
// one New or NewSends share through pointers (the notifier, the live forwards, the
// logger). It is passed by value. It takes a context and a claimKey, never an
// *http.Request: the HTTP middleware and the other bindings run it through [Sends].
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
}

// claimIdentity returns what identifies send's message in the index, the messageID
// passed to KeyIndex.Claim: the one place that turns a read send into it. It is the
// message id itself, as the Rust SDK's extension claims it, unless the send names its
// caller (Send.Principal) or its content's fingerprint (Send.Fingerprint): then it is
// a fixed-size digest of the message id and those, so that the same message id from
// another caller, or with other content, is another message ("already held"), and
// nothing of the first attempt reaches it.
func claimIdentity(send *Send) string {
	if send.Principal == "" && send.Fingerprint == "" {
		return send.MessageID
	}
	h := sha256.New()
	var n [8]byte
	for _, f := range [...]string{send.MessageID, send.Principal, send.Fingerprint} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return identityPrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// identityPrefix starts every digest claimIdentity makes (53 bytes in all).
const identityPrefix = "a2akit:v1:"

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
	return &ClaimedSend{index: c.index, scope: k.scope, key: k.key, messageID: send.MessageID, token: token,
		waiters: c.waiters, timeout: c.indexTimeout, requestID: send.RequestID}
}

// begin is the engine's first state, checked: it checks send, claims its key or
// waits for the first attempt that holds it (decide), and returns the Step: a
// refusal (logged and reported), a claim to forward, a record to replay, or a
// client gone. It sets send's claim key. honours asks the index whether it can
// honour keys.
func (c core) begin(ctx context.Context, send *Send, scope func() (string, error), honours func(context.Context) bool) *Step {
	if send.RequestID == "" {
		send.RequestID = newRequestID()
	}
	// refuse answers f with outcome o, or nothing when the client has gone.
	refuse := func(o Outcome, f *failure, ext bool, level slog.Level, msg string, extra ...slog.Attr) *Step {
		o = outcomeOr(ctx, o)
		send.outcome.set(o)
		if o == OutcomeAbandoned {
			level, msg = slog.LevelInfo, "idempotency: client went away before its keyed send was answered"
		}
		c.logSend(ctx, send, level, msg, extra...)
		c.observeSend(send, o)
		if o == OutcomeAbandoned {
			return &Step{Gone: true}
		}
		return &Step{Refusal: refusalOf(f, ext)}
	}
	invalid := func(o Outcome, f *failure, ext bool) *Step {
		return refuse(o, f, ext, slog.LevelDebug, "idempotency: keyed send refused", slog.String("reason", f.message))
	}
	if send.KeyErr != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: send.KeyErr.Error()}, true)
	}
	if send.MessageID == "" {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: msgNoMessageID}, true)
	}
	start := time.Now()
	ok := honours(ctx)
	since(&send.t.index, start)
	if !ok {
		return invalid(OutcomeUnsupported, &failure{kind: failUnsupported, message: msgCannotHonour}, false)
	}
	sc, err := scope()
	if err != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: err.Error()}, true)
	}
	if err := idempotency.CheckLengths(sc, send.MessageID, idempotency.Binding{TaskID: send.TaskID}); err != nil {
		return invalid(OutcomeRefused, &failure{kind: failInvalidParams, message: "the keyed send was refused: " +
			strings.TrimPrefix(err.Error(), idempotency.ErrInvalidArgument.Error()+": ") + msgTooLong}, true)
	}
	send.k = claimKey{scope: sc, key: send.Key, messageID: claimIdentity(send)}

	d := c.decide(ctx, send.k, &send.t)
	switch d.kind {
	case decideForward:
		c.logSend(ctx, send, slog.LevelDebug, "idempotency: key claimed, send forwarded",
			slog.String("message_id", idempotency.LogValue(send.MessageID)), slog.String("follow_up_of", idempotency.LogValue(send.TaskID)))
		return &Step{claim: c.newClaim(send, d.token)}
	case decideReplay:
		if unreplayable(d.rec) {
			return refuse(OutcomeUnreplayable, unreplayableFailure(), true, slog.LevelInfo,
				"idempotency: retry of a send whose reply is past the index's bounds; answered that it cannot be replayed")
		}
		return &Step{Record: d.rec}
	case decideConflict:
		return refuse(OutcomeConflict, &failure{kind: failInvalidParams, reason: ReasonKeyReused, message: msgAlreadyHeld}, true,
			slog.LevelInfo, "idempotency: key reused by a different message, send refused")
	case decideInFlight:
		// Retry-After is the time left on the lease: the first attempt's owner extends
		// it while it runs, and a retry may take the claim over only once it ends.
		left := time.Until(d.rec.LeaseExpiresAt)
		retry := max(left, time.Second)
		return refuse(OutcomeInFlight, &failure{kind: failInFlight, message: msgInFlight, retryAfter: retry}, true,
			slog.LevelInfo, "idempotency: first attempt still in flight, retry answered 409",
			slog.Duration("lease_left", left.Round(time.Millisecond)), slog.Duration("retry_after", retry))
	case decideUnavailable:
		switch {
		case ctx.Err() == nil && errors.Is(d.err, idempotency.ErrInvalidArgument):
			// A client error: retrying the same send cannot help. The index's text
			// stays in the log.
			return refuse(OutcomeRefused, &failure{kind: failInvalidParams, message: msgIndexRefused}, true, slog.LevelInfo,
				"idempotency: index "+d.op+" refused the keyed send's values", slog.Any("error", d.err))
		case ctx.Err() == nil && errors.Is(d.err, idempotency.ErrFull):
			return refuse(OutcomeUnavailable, &failure{kind: failExhausted, message: msgFull, retryAfter: fullRetryAfter}, true,
				slog.LevelWarn, "idempotency: index full, keyed send refused", slog.Any("error", d.err))
		}
		if ctx.Err() != nil {
			// The client went away while the index was asked: not the index's fault.
			return refuse(OutcomeAbandoned, nil, false, slog.LevelInfo,
				"idempotency: client went away during the index "+d.op+", keyed send not run", slog.Any("error", d.err))
		}
		return refuse(OutcomeUnavailable, unavailableFailure(), true, slog.LevelWarn,
			"idempotency: index "+d.op+" failed, keyed send refused (fail closed)", slog.Any("error", d.err))
	}
	// decideGone
	return refuse(OutcomeAbandoned, nil, false, slog.LevelInfo, "idempotency: client went away while its retry waited for the first attempt")
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
