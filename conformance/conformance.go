package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

// Harness is an index under test together with what its author can offer beyond the
// [idempotency.KeyIndex] interface. Only Index is required. A nil func field (or a zero
// TTL) means the capability is absent, and the checks that need it are skipped with a
// message that names the field.
type Harness struct {
	// Index is the index under test. It should be fresh: the suite builds a new Harness
	// for every check, and although the checks use random keys, and random scopes where
	// they count keys, a storage shared with another check running at the same time
	// could make a count or a sweep report differ (SweepBatches and
	// SweepCancelledMidway want KeysDeleted to be exactly the keys the check made old).
	Index idempotency.KeyIndex

	// Advance moves the clock of Index (and of every handle OpenHandle opens) forward
	// by d. With it, the lease checks step five seconds before and after the end of a
	// one-minute lease, the time-to-live checks step over the TTL, and the sweep checks
	// age keys by minutes, all without sleeping; [Clock] provides one. LeaseBoundary and
	// TTLBoundary also step to the exact end, which an index that stores whole seconds
	// meets when it truncates (or rounds up) claim times and the clock alike.
	//
	// Without it, the lease and sweep checks run on the real clock with leases and ages
	// of a few hundred milliseconds. An index whose clock cannot resolve those (one
	// that stores whole seconds, or asks a database server whose clock differs from
	// the test's) must offer Advance. When the machine stalls for longer than a lease,
	// a real-clock check that could no longer keep its timing is skipped rather than
	// failed.
	Advance func(d time.Duration)

	// TTL is the time to live Index was built with. Together with Advance it enables
	// the time-to-live checks, which step to TTL minus a tenth of it (at most a minute)
	// and to TTL plus as much.
	TTL time.Duration

	// OpenHandle opens another handle on the storage behind Index, the way a second
	// process would (another connection pool on the same database). It enables the
	// checks that claims and fencing hold across handles. Register the handle's
	// teardown with t.Cleanup on the t given to the newHarness function.
	OpenHandle func() (idempotency.KeyIndex, error)

	// CreateTask creates a task in the task store served next to Index, and returns its
	// id. DeleteTask deletes a task the way the server does (including any cascade the
	// task store's schema declares). Together they enable the check that a key
	// survives the deletion of its task; offer both or neither.
	CreateTask func(ctx context.Context) (taskID string, err error)
	DeleteTask func(ctx context.Context, taskID string) error
}

// Run runs the suite against the indexes newIndex returns, on the real clock and
// without the optional capabilities of a [Harness]. It calls newIndex once per
// check, inside the check's subtest, so newIndex can register the index's teardown
// with t.Cleanup. Each check is a subtest with a stable name; one that fails calls
// t.Error.
func Run(t *testing.T, newIndex func(t *testing.T) idempotency.KeyIndex) {
	t.Helper()
	RunHarness(t, func(t *testing.T) Harness {
		return Harness{Index: newIndex(t)}
	})
}

// RunHarness runs the suite against the harnesses newHarness returns. It calls
// newHarness once per check, inside the check's subtest, so newHarness can register
// teardown with t.Cleanup. Each check is a subtest with a stable name: it fails with
// t.Error when the index breaks the contract, and is skipped, with a message naming
// what is missing, when it needs a capability the harness does not offer or an
// optional interface the index does not implement.
func RunHarness(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			h := newHarness(t)
			if h.Index == nil {
				t.Fatal("conformance: the Harness has no Index")
			}
			err := c.exec(t.Context(), h)
			var skip *skipError
			switch {
			case errors.As(err, &skip):
				t.Skip(skip.reason)
			case err != nil:
				t.Error(err)
			}
		})
	}
}

// checkTimeout bounds each check, through the ctx it passes to the index.
const checkTimeout = 2 * time.Minute

// A check is one property of the contract. run returns nil when the index has it, an
// error saying what went wrong when it does not, and a *skipError when the check could
// not run.
type check struct {
	name  string
	needs capability
	run   func(e *env) error
}

// exec runs c against h with a context derived from ctx.
func (c check) exec(ctx context.Context, h Harness) error {
	if missing := c.needs.missing(h); missing != "" {
		return skipf("%s needs %s", c.name, missing)
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return c.run(&env{ctx: ctx, h: h, ix: h.Index})
}

// capability is a set of optional Harness fields a check needs.
type capability uint8

const (
	needClock   capability = 1 << iota // Advance
	needTTL                            // Advance and TTL
	needHandles                        // OpenHandle
	needTasks                          // CreateTask and DeleteTask
)

// missing names the capabilities in c that h does not offer, or returns "".
func (c capability) missing(h Harness) string {
	var m []string
	if c&(needClock|needTTL) != 0 && h.Advance == nil {
		m = append(m, "a controllable clock (Harness.Advance)")
	}
	if c&needTTL != 0 && h.TTL <= 0 {
		m = append(m, "the index's time to live (Harness.TTL)")
	}
	if c&needHandles != 0 && h.OpenHandle == nil {
		m = append(m, "a second handle on the same storage (Harness.OpenHandle)")
	}
	if c&needTasks != 0 && (h.CreateTask == nil || h.DeleteTask == nil) {
		m = append(m, "a task store (Harness.CreateTask and Harness.DeleteTask)")
	}
	return strings.Join(m, " and ")
}

// skipError reports that a check could not run.
type skipError struct{ reason string }

func (s *skipError) Error() string { return "skipped: " + s.reason }

func skipf(format string, args ...any) error {
	return &skipError{reason: fmt.Sprintf(format, args...)}
}

// Leases and steps. With a controllable clock, a lease is a minute and a step over its
// end is five seconds, which indexes that store whole seconds resolve; on the real
// clock they are short, so that the suite stays fast.
const (
	clockLease  = time.Minute
	clockMargin = 5 * time.Second
	realLease   = 250 * time.Millisecond
	realMargin  = 100 * time.Millisecond

	// longLease is the lease of claims that must not end during a check.
	longLease = time.Hour
)

// Message ids, task ids and replies used by the checks. Keys are random (see env.key).
const (
	msgA  = "conformance-message-a"
	msgB  = "conformance-message-b"
	taskA = "conformance-task-a"
	taskB = "conformance-task-b"
)

var (
	replyA = []byte(`{"messageId":"conformance-reply-a","role":"ROLE_AGENT","parts":[{"text":"a"}]}`)
	replyB = []byte(`{"messageId":"conformance-reply-b","role":"ROLE_AGENT","parts":[{"text":"b"}]}`)
)

var (
	pending  = idempotency.Binding{}
	boundA   = idempotency.Binding{TaskID: taskA}
	boundB   = idempotency.Binding{TaskID: taskB}
	repliedA = idempotency.Binding{Reply: replyA}
	repliedB = idempotency.Binding{Reply: replyB}
)

// env is what a check runs against.
type env struct {
	ctx context.Context
	h   Harness
	ix  idempotency.KeyIndex
}

// key returns a fresh random key, so that checks never meet keys that other checks
// left in a shared storage.
func (e *env) key() string { return idempotency.NewKey() }

// scope returns a fresh random scope, for checks that count the keys of a scope.
func (e *env) scope() string { return "conformance-" + idempotency.NewKey()[:12] }

// clock reports whether the harness offers a controllable clock.
func (e *env) clock() bool { return e.h.Advance != nil }

// lease is the lease of a claim meant to end during a check, and margin how far a
// check steps before or after its end.
func (e *env) lease() time.Duration {
	if e.clock() {
		return clockLease
	}
	return realLease
}

func (e *env) margin() time.Duration {
	if e.clock() {
		return clockMargin
	}
	return realMargin
}

// ttlMargin is how far the time-to-live checks step before and after the TTL, and
// ttlLease the lease of their claims: short enough to end well within the TTL.
func (e *env) ttlMargin() time.Duration { return min(e.h.TTL/10, time.Minute) }
func (e *env) ttlLease() time.Duration  { return min(e.h.TTL/4, time.Minute) }

// A timeline lets time pass from the moment a check claimed a key: on the
// controllable clock by advancing it, on the real clock by sleeping.
type timeline struct {
	e      *env
	start  time.Time     // real clock: before the call that started the timeline
	origin time.Time     // real clock: after it returned
	at     time.Duration // controllable clock: how far it was advanced
}

// since starts a timeline at a call that began at start and has just returned.
func (e *env) since(start time.Time) *timeline {
	return &timeline{e: e, start: start, origin: time.Now()}
}

// to lets time pass until d after the timeline's origin. Time never runs back: when
// that moment has passed, to returns at once.
func (tl *timeline) to(d time.Duration) {
	if tl.e.clock() {
		if d > tl.at {
			tl.e.h.Advance(d - tl.at)
			tl.at = d
		}
		return
	}
	time.Sleep(time.Until(tl.origin.Add(d)))
}

// overran reports whether, on the real clock, d or more has passed since the call that
// started the timeline began: a step meant to happen before d may then have happened
// after it, and a failure proves nothing.
func (tl *timeline) overran(d time.Duration) bool {
	return !tl.e.clock() && time.Since(tl.start) >= d
}

// stalled is the error of a real-clock check whose timing could not be kept.
func stalled(what string, d time.Duration) error {
	return skipf("the machine stalled: more than %v passed before %s, so the check "+
		"could not keep its timing (offer Harness.Advance to make it exact)", d, what)
}

// own claims a free key and returns the token, or an error when the Claim did not
// return Claimed with a non-zero token.
func (e *env) own(scope, key, msg string, lease time.Duration) (idempotency.Token, error) {
	return e.ownOn(e.ix, scope, key, msg, lease)
}

func (e *env) ownOn(ix idempotency.KeyIndex, scope, key, msg string, lease time.Duration) (idempotency.Token, error) {
	c, err := ix.Claim(e.ctx, scope, key, msg, lease)
	if err != nil {
		return 0, fmt.Errorf("Claim(%s, %q): %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.Claimed || c.Token == 0 {
		return 0, fmt.Errorf("Claim(%s, %q) = %s; want claimed with a non-zero token", where(scope, key), msg, describe(c))
	}
	return c.Token, nil
}

// ownBound claims a free key and binds it to b.
func (e *env) ownBound(scope, key, msg string, b idempotency.Binding) (idempotency.Token, error) {
	tok, err := e.own(scope, key, msg, longLease)
	if err != nil {
		return 0, err
	}
	return tok, e.bind(scope, key, tok, b)
}

// bind binds (scope, key) to b under tok and wants success.
func (e *env) bind(scope, key string, tok idempotency.Token, b idempotency.Binding) error {
	return e.bindOn(e.ix, scope, key, tok, b)
}

func (e *env) bindOn(ix idempotency.KeyIndex, scope, key string, tok idempotency.Token, b idempotency.Binding) error {
	if err := ix.Bind(e.ctx, scope, key, tok, b); err != nil {
		return fmt.Errorf("Bind(%s, owner's token, %s): %w", where(scope, key), describeBinding(b), err)
	}
	return nil
}

// release releases (scope, key) under tok and wants nil.
func (e *env) release(scope, key string, tok idempotency.Token) error {
	if err := e.ix.Release(e.ctx, scope, key, tok); err != nil {
		return fmt.Errorf("Release(%s, owner's token): %w", where(scope, key), err)
	}
	return nil
}

// wantFenced wants Bind and Release of key (in the empty scope) under tok, a token
// that no longer owns it, to return ErrNotOwner; with names the token in failure
// messages.
func (e *env) wantFenced(key string, tok idempotency.Token, with string) error {
	err := e.ix.Bind(e.ctx, "", key, tok, boundB)
	if err := wantErr("Bind with "+with, err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	err = e.ix.Release(e.ctx, "", key, tok)
	return wantErr("Release with "+with, err, idempotency.ErrNotOwner)
}

// wantSame claims (scope, key) as msg and wants [idempotency.HeldBySameMessage] with
// a Record that names msg and carries b (pending when b is zero).
func (e *env) wantSame(scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	return e.wantSameOn(e.ix, scope, key, msg, b)
}

func (e *env) wantSameOn(ix idempotency.KeyIndex, scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	c, err := ix.Claim(e.ctx, scope, key, msg, longLease)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("Claim(%s, %q) by the holding message: %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.HeldBySameMessage || c.Token != 0 ||
		c.Record.MessageID != msg || !carries(c.Record, b) {
		return c.Record, fmt.Errorf("Claim(%s, %q) by the holding message = %s; want held by same message %q, %s, with no token",
			where(scope, key), msg, describe(c), msg, describeBinding(b))
	}
	return c.Record, nil
}

// wantOther claims (scope, key) as msg and wants [idempotency.HeldByOtherMessage] with
// an empty Record and no token.
func (e *env) wantOther(scope, key, msg string) error {
	c, err := e.ix.Claim(e.ctx, scope, key, msg, longLease)
	if err != nil {
		return fmt.Errorf("Claim(%s, %q) by another message: %w", where(scope, key), msg, err)
	}
	if c.Status != idempotency.HeldByOtherMessage || c.Token != 0 || !emptyRecord(c.Record) {
		return fmt.Errorf("Claim(%s, %q) by another message = %s; want held by other message, with an empty Record and no token",
			where(scope, key), msg, describe(c))
	}
	return nil
}

// wantHeld looks (scope, key) up and wants a Record that names msg and carries b.
func (e *env) wantHeld(scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	return e.wantHeldOn(e.ix, scope, key, msg, b)
}

func (e *env) wantHeldOn(ix idempotency.KeyIndex, scope, key, msg string, b idempotency.Binding) (idempotency.Record, error) {
	r, ok, err := ix.Lookup(e.ctx, scope, key)
	if err != nil {
		return r, fmt.Errorf("Lookup(%s): %w", where(scope, key), err)
	}
	if !ok || r.MessageID != msg || !carries(r, b) {
		return r, fmt.Errorf("Lookup(%s) = %s, %t; want the Record of message %q, %s",
			where(scope, key), describeRecord(r), ok, msg, describeBinding(b))
	}
	return r, nil
}

// wantAbsent looks (scope, key) up and wants it absent.
func (e *env) wantAbsent(scope, key string) error {
	r, ok, err := e.ix.Lookup(e.ctx, scope, key)
	if err != nil {
		return fmt.Errorf("Lookup(%s): %w", where(scope, key), err)
	}
	if ok {
		return fmt.Errorf("Lookup(%s) = %s, true; want the key absent", where(scope, key), describeRecord(r))
	}
	return nil
}

// wantErr checks that err wraps one of targets; what names the call.
func wantErr(what string, err error, targets ...error) error {
	for _, target := range targets {
		if errors.Is(err, target) {
			return nil
		}
	}
	var names []string
	for _, target := range targets {
		names = append(names, sentinelName(target))
	}
	return fmt.Errorf("%s = %v; want an error wrapping %s", what, err, strings.Join(names, " or "))
}

// sentinelName names a sentinel error for failure messages.
func sentinelName(target error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{idempotency.ErrNotOwner, "idempotency.ErrNotOwner"},
		{idempotency.ErrAlreadyBound, "idempotency.ErrAlreadyBound"},
		{idempotency.ErrFull, "idempotency.ErrFull"},
		{idempotency.ErrInvalidArgument, "idempotency.ErrInvalidArgument"},
		{context.Canceled, "context.Canceled"},
	} {
		if errors.Is(target, s.err) {
			return s.name
		}
	}
	return fmt.Sprintf("%q", target)
}

// carries reports whether r holds b: the same task id and reply, or pending when b is
// zero. A pending Record's Reply must be nil, as [idempotency.Record.Pending] says.
func carries(r idempotency.Record, b idempotency.Binding) bool {
	return r.TaskID == b.TaskID && (r.Reply == nil) == (b.Reply == nil) && bytes.Equal(r.Reply, b.Reply)
}

// emptyRecord reports whether r discloses nothing.
func emptyRecord(r idempotency.Record) bool {
	return r.MessageID == "" && r.TaskID == "" && r.Reply == nil &&
		r.ClaimedAt.IsZero() && r.LeaseExpiresAt.IsZero()
}

func where(scope, key string) string { return fmt.Sprintf("scope %q, key %q", scope, key) }

func describe(c idempotency.Claim) string {
	s := c.Status.String()
	if c.Token != 0 {
		s += fmt.Sprintf(", token %d", c.Token)
	}
	if c.Status != idempotency.Claimed || !emptyRecord(c.Record) {
		s += ", Record " + describeRecord(c.Record)
	}
	return s
}

func describeRecord(r idempotency.Record) string {
	if emptyRecord(r) {
		return "{}"
	}
	b := "pending"
	switch {
	case r.TaskID != "" && r.Reply != nil:
		b = fmt.Sprintf("task %q and reply %q", r.TaskID, r.Reply)
	case r.TaskID != "":
		b = fmt.Sprintf("task %q", r.TaskID)
	case r.Reply != nil:
		b = fmt.Sprintf("reply %q", r.Reply)
	}
	return fmt.Sprintf("{message %q, %s, claimed at %s, lease until %s}", r.MessageID, b,
		r.ClaimedAt.Format(time.RFC3339Nano), r.LeaseExpiresAt.Format(time.RFC3339Nano))
}

func describeBinding(b idempotency.Binding) string {
	switch {
	case b.TaskID != "" && b.Reply != nil:
		return fmt.Sprintf("task %q and reply %q", b.TaskID, b.Reply)
	case b.TaskID != "":
		return fmt.Sprintf("task %q", b.TaskID)
	case b.Reply != nil:
		return fmt.Sprintf("reply %q", b.Reply)
	}
	return "pending"
}
