package conformance

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// refIndex is a small, correct KeyIndex: one mutex over one map, an injectable clock.
// The suite must pass on it; the broken indexes in broken_test.go are variants of it,
// and so are those its bug field selects (see bugs_test.go; zero is correct). It also
// implements Sweeper, CapacityReporter and Honouring, so that the optional checks run.
type refIndex struct {
	now   func() time.Time
	ttl   time.Duration // zero: keys never expire
	limit int           // keys per scope; zero: no bound
	bug   bug

	mu     sync.Mutex
	tokens idempotency.Token
	keys   map[refKey]*refEntry
	held   map[string]int // live and expired-but-not-dropped entries per scope
}

type refKey struct{ scope, key string }

type refEntry struct {
	messageID string
	token     idempotency.Token
	taskID    string
	reply     []byte
	claimedAt time.Time
	leaseEnd  time.Time
	leaseLen  time.Duration
	released  bool // only with bugReleaseTombstone
	replyOnly bool // only with bugReplyOnlyPending: pending means no task id
}

func (e *refEntry) pending() bool {
	if e.replyOnly {
		return e.taskID == ""
	}
	return e.taskID == "" && e.reply == nil
}

func (e *refEntry) record() idempotency.Record {
	return idempotency.Record{
		MessageID:      e.messageID,
		TaskID:         e.taskID,
		Reply:          bytes.Clone(e.reply),
		ClaimedAt:      e.claimedAt,
		LeaseExpiresAt: e.leaseEnd,
	}
}

// recordOf is e.record() as the index's bug returns it.
func (x *refIndex) recordOf(e *refEntry) idempotency.Record {
	r := e.record()
	switch x.bug {
	case bugAliasesRecords:
		r.Reply = e.reply
	case bugRecordLacksLease:
		r.LeaseExpiresAt = time.Time{}
	}
	return r
}

func (x *refIndex) leaseEnded(e *refEntry, now time.Time) bool {
	if x.bug == bugLeaseEndExclusive {
		return now.After(e.leaseEnd)
	}
	return !now.Before(e.leaseEnd)
}

var (
	_ idempotency.KeyIndex         = (*refIndex)(nil)
	_ idempotency.Sweeper          = (*refIndex)(nil)
	_ idempotency.CapacityReporter = (*refIndex)(nil)
	_ idempotency.Honouring        = (*refIndex)(nil)
)

func newRefIndex(now func() time.Time, ttl time.Duration, limit int) *refIndex {
	return &refIndex{now: now, ttl: ttl, limit: limit, keys: make(map[refKey]*refEntry), held: make(map[string]int)}
}

func newBuggyRefIndex(now func() time.Time, ttl time.Duration, limit int, b bug) *refIndex {
	x := newRefIndex(now, ttl, limit)
	x.bug = b
	return x
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("refindex: %w: %s", idempotency.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func checkKey(key string) error {
	if err := idempotency.ValidateKey(key); err != nil {
		return fmt.Errorf("refindex: %w: %w", idempotency.ErrInvalidArgument, err)
	}
	return nil
}

// live returns the entry of k unless it is absent or past its time to live, in which
// case it is dropped. x.mu must be held.
func (x *refIndex) live(k refKey, now time.Time) (*refEntry, bool) {
	e, ok := x.keys[k]
	if !ok || e.released {
		return nil, false
	}
	if x.expired(e, now) {
		x.drop(k)
		return nil, false
	}
	return e, true
}

func (x *refIndex) expired(e *refEntry, now time.Time) bool {
	if x.ttl <= 0 || x.bug == bugIgnoresTTL {
		return false
	}
	if x.bug == bugTTLEndExclusive {
		return now.After(e.claimedAt.Add(x.ttl))
	}
	return !now.Before(e.claimedAt.Add(x.ttl))
}

// put stores e under k. x.mu must be held.
func (x *refIndex) put(k refKey, e *refEntry) {
	if _, ok := x.keys[k]; !ok {
		x.held[k.scope]++
	}
	x.keys[k] = e
}

// drop deletes k. x.mu must be held.
func (x *refIndex) drop(k refKey) {
	if _, ok := x.keys[k]; ok {
		delete(x.keys, k)
		x.held[k.scope]--
	}
}

// full reports whether scope holds as many live keys as allowed, dropping expired
// keys of the scope first. x.mu must be held.
func (x *refIndex) full(scope string, now time.Time) bool {
	if x.limit == 0 || x.held[scope] < x.limit {
		return false
	}
	for k := range x.keys {
		if k.scope == scope {
			x.live(k, now)
		}
	}
	return x.held[scope] >= x.limit
}

func (x *refIndex) newToken() idempotency.Token {
	x.tokens++
	return x.tokens
}

// tokenFor issues the token of a claim of k, which old held before (nil if none).
func (x *refIndex) tokenFor(old *refEntry) idempotency.Token {
	if x.bug == bugTokensNotUnique {
		// A counter per key, as in a "version" attribute: 1 for a new item.
		if old != nil && !old.released {
			return old.token + 1
		}
		return 1
	}
	return x.newToken()
}

func (x *refIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if x.bug != bugCtxOnlyOnWrites && x.bug != bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if err := checkKey(key); err != nil {
		return idempotency.Claim{}, err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if x.bug == bugLeaseWholeSeconds {
		lease = time.Duration(lease.Seconds()) * time.Second // EXPIRE takes whole seconds
	}
	if x.bug == bugNonAtomicCapacity {
		if c, done, err := x.claimCountingApart(ctx, scope, key, messageID, lease); done {
			return c, err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now, k := x.now(), refKey{scope, key}
	if x.bug == bugFullBeforeLookup && x.limit > 0 && x.held[scope] >= x.limit {
		return idempotency.Claim{}, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
	}
	old := x.keys[k]
	if old != nil && !old.released && x.expired(old, now) && x.bug == bugExpiredSameMessageHeld && old.messageID == messageID {
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: x.recordOf(old)}, nil
	}
	if e, ok := x.live(k, now); ok {
		switch {
		case e.messageID != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
		case e.pending() && x.leaseEnded(e, now):
			return x.takeover(ctx, e, now, lease)
		}
		r := x.recordOf(e)
		if x.bug == bugSameMessageEmptyRecord {
			r.TaskID, r.Reply = "", nil
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: r}, nil
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	if x.bug == bugValidatesOnlyNewKeys {
		if err := claimArgs(messageID, lease); err != nil {
			return idempotency.Claim{}, err
		}
	}
	claimedAt := now
	if old != nil && ((x.bug == bugExpiredReclaimKeepsClaimTime && !old.released) || (x.bug == bugReleaseTombstone && old.released)) {
		claimedAt = old.claimedAt // an upsert that keeps the row's claimed_at
	}
	if x.full(scope, now) {
		switch {
		case x.bug == bugEvictsAbandoned && x.evictAbandoned(scope, now):
		default:
			return idempotency.Claim{}, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
		}
	}
	e := &refEntry{messageID: messageID, token: x.tokenFor(old), claimedAt: claimedAt, leaseEnd: now.Add(lease),
		leaseLen: lease, replyOnly: x.bug == bugReplyOnlyPending}
	x.put(k, e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

// takeover gives the abandoned claim e a new owner. x.mu is held.
func (x *refIndex) takeover(ctx context.Context, e *refEntry, now time.Time, lease time.Duration) (idempotency.Claim, error) {
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	e.token = x.tokenFor(e)
	e.leaseEnd, e.leaseLen = x.bug.takeoverLease(now, e.claimedAt, e.leaseLen, lease)
	if x.bug == bugTakeoverBeforeCtx {
		if err := ctx.Err(); err != nil {
			return idempotency.Claim{}, err
		}
	}
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

// claimCountingApart is Claim of a new key by an index that counts the scope's keys
// in one step and inserts in another. It reports done false when the key is held.
func (x *refIndex) claimCountingApart(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, bool, error) {
	k := refKey{scope, key}
	x.mu.Lock()
	_, held := x.live(k, x.now())
	full := x.full(scope, x.now())
	x.mu.Unlock()
	if held {
		return idempotency.Claim{}, false, nil
	}
	if full {
		return idempotency.Claim{}, true, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
	}
	time.Sleep(100 * time.Microsecond) // SELECT COUNT(*), then INSERT
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, held := x.live(k, x.now()); held {
		return idempotency.Claim{}, false, nil
	}
	now := x.now()
	e := &refEntry{messageID: messageID, token: x.newToken(), claimedAt: now, leaseEnd: now.Add(lease), leaseLen: lease}
	x.put(k, e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, true, nil
}

// evictAbandoned drops one abandoned claim of scope, and reports whether it found one.
// x.mu is held.
func (x *refIndex) evictAbandoned(scope string, now time.Time) bool {
	for k, e := range x.keys {
		if k.scope == scope && e.pending() && x.leaseEnded(e, now) {
			x.drop(k)
			return true
		}
	}
	return false
}

func checkBinding(b idempotency.Binding) error {
	if b.TaskID == "" && len(b.Reply) == 0 {
		return invalid("a Binding needs a TaskID or a non-empty Reply")
	}
	return nil
}

func (x *refIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if x.bug != bugValidatesOnlyNewKeys {
		if err := bindArgs(token, b); err != nil {
			return err
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e, ok := x.keys[refKey{scope, key}]
	if !ok || e.released || (x.bug != bugBindIgnoresTTL && x.expired(e, now)) || e.token != token {
		return fmt.Errorf("refindex: bind: %w", idempotency.ErrNotOwner)
	}
	if x.bug == bugValidatesOnlyNewKeys && e.pending() {
		if err := bindArgs(token, b); err != nil {
			return err
		}
	}
	write, err := x.judgeBind(e, b)
	if err != nil || !write {
		return err
	}
	if x.bug == bugBindNonAtomic {
		x.mu.Unlock() // the state read and judged, then the write: two round trips
		time.Sleep(100 * time.Microsecond)
		x.mu.Lock()
	}
	e.taskID = b.TaskID
	if x.bug == bugTornBind {
		x.mu.Unlock() // SET task_id, then SET reply, outside one transaction
		time.Sleep(50 * time.Microsecond)
		x.mu.Lock()
	}
	e.reply = nil
	switch {
	case len(b.Reply) > 0:
		e.reply = bytes.Clone(b.Reply)
	case x.bug == bugStoresEmptyReply && b.Reply != nil:
		e.reply = []byte{}
	}
	return nil
}

func bindArgs(token idempotency.Token, b idempotency.Binding) error {
	if token == 0 {
		return invalid("zero token")
	}
	return checkBinding(b)
}

// judgeBind says whether binding e to b writes, succeeds without writing, or fails:
// idempotently (b may be the bound value or a part of it), and a task id alone may
// gain a reply.
func (x *refIndex) judgeBind(e *refEntry, b idempotency.Binding) (write bool, err error) {
	same := (b.TaskID == "" || e.taskID == b.TaskID) && (len(b.Reply) == 0 || bytes.Equal(e.reply, b.Reply))
	switch {
	case x.bug == bugBindOverwrites:
		return true, nil
	case same && !e.pending():
		if x.bug == bugRebindFails {
			return false, fmt.Errorf("refindex: bind: %w", idempotency.ErrAlreadyBound)
		}
		return false, nil
	case e.pending():
		return true, nil
	case e.taskID != "" && e.reply == nil && b.TaskID == e.taskID && x.bug != bugTaskCannotGainReply:
		return true, nil
	}
	return false, fmt.Errorf("refindex: bind: %w", idempotency.ErrAlreadyBound)
}

func (x *refIndex) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if x.bug != bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if token == 0 && x.bug != bugValidatesOnlyNewKeys {
		return invalid("zero token")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := refKey{scope, key}
	e, ok := x.live(k, x.now())
	switch {
	case !ok:
		if x.bug == bugReleaseNotHeldErr {
			return fmt.Errorf("refindex: release: %w", idempotency.ErrNotOwner)
		}
		return nil
	case e.token != token:
		return fmt.Errorf("refindex: release: %w", idempotency.ErrNotOwner)
	case !e.pending():
		return nil // a bound key is never released
	}
	if x.bug == bugCtxOnlyOnWrites {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	switch x.bug {
	case bugReleaseKeepsKey:
		return nil
	case bugReleaseTombstone:
		e.released = true // a soft delete: the row stays, marked
		return nil
	case bugReleaseNonAtomic:
		x.mu.Unlock() // the token checked, then DELETE by key
		time.Sleep(100 * time.Microsecond)
		x.mu.Lock()
	}
	x.drop(k)
	return nil
}

func (x *refIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Record{}, false, err
	}
	if err := checkKey(key); err != nil {
		return idempotency.Record{}, false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e, ok := x.live(refKey{scope, key}, now)
	if !ok || (x.bug == bugLookupHidesPending && e.pending()) {
		return idempotency.Record{}, false, nil
	}
	if x.bug == bugLookupExtendsLease && e.pending() {
		e.leaseEnd = now.Add(e.leaseLen) // GET, then EXPIRE: a touch
	}
	return x.recordOf(e), true, nil
}

func (x *refIndex) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	switch {
	case token == 0:
		return invalid("zero token")
	case lease <= 0:
		return invalid("lease %v is not positive", lease)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	e, ok := x.live(refKey{scope, key}, now)
	if !ok || e.token != token || !e.pending() || x.leaseEnded(e, now) {
		return fmt.Errorf("refindex: extend: %w", idempotency.ErrNotOwner)
	}
	e.leaseEnd, e.leaseLen = now.Add(lease), lease
	return nil
}

func (x *refIndex) HonoursKeys(context.Context) bool { return true }

func (x *refIndex) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Capacity{}, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c := idempotency.Capacity{Held: x.held[scope], Limit: x.limit}
	if x.bug == bugCapacityMissesEmptyScope && scope == "" {
		c.Held = 0
	}
	if x.bug == bugReportsNoLimit {
		c.Limit = 0
	}
	return c, nil
}

func (x *refIndex) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	return x.purge(ctx, p, func(e *refEntry, now time.Time) bool {
		return !e.pending() || x.leaseEnded(e, now)
	})
}

// purge deletes, in batches, the keys older than the policy's age that deletable
// allows.
func (x *refIndex) purge(ctx context.Context, p idempotency.RetentionPolicy, deletable func(e *refEntry, now time.Time) bool) (idempotency.PurgeReport, error) {
	var rep idempotency.PurgeReport
	age, ok := p.EffectiveKeyMaxAge()
	if !ok {
		rep.Complete = true
		return rep, nil
	}
	size := p.EffectiveBatchSize()
	for p.MaxBatches <= 0 || rep.Batches < p.MaxBatches {
		if err := ctx.Err(); err != nil {
			if x.bug == bugSweepLosesReportOnCancel {
				return idempotency.PurgeReport{}, err
			}
			return rep, err
		}
		n := x.purgeBatch(age, size, deletable)
		rep.Batches++
		rep.KeysDeleted += int64(n)
		if x.bug == bugSweepReportsBatchSize {
			rep.KeysDeleted += int64(size - n)
		}
		if n < size {
			rep.Complete = true
			return rep, nil
		}
	}
	return rep, nil
}

func (x *refIndex) purgeBatch(age time.Duration, size int, deletable func(e *refEntry, now time.Time) bool) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	var batch []refKey
	for k, e := range x.keys {
		if len(batch) == size {
			break
		}
		old := now.Sub(e.claimedAt) >= age
		if (old && deletable(e, now)) || (x.bug == bugSweepsAbandonedYoung && e.pending() && x.leaseEnded(e, now)) {
			batch = append(batch, k)
		}
	}
	if x.bug == bugSweepSnapshot {
		x.mu.Unlock() // SELECT the keys, then DELETE them by key, judged once
		time.Sleep(200 * time.Microsecond)
		x.mu.Lock()
	}
	for _, k := range batch {
		x.drop(k)
	}
	return len(batch)
}
