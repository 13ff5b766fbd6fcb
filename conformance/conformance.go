package conformance

import (
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
	bothA    = idempotency.Binding{TaskID: taskA, Reply: replyA}
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
