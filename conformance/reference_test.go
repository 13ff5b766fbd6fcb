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
// The suite must pass on it; the broken indexes in broken_test.go are variants of it.
// It also implements Sweeper, CapacityReporter and Honouring, so that the optional
// checks run.
type refIndex struct {
	now   func() time.Time
	ttl   time.Duration // zero: keys never expire
	limit int           // keys per scope; zero: no bound

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
}

func (e *refEntry) pending() bool { return e.taskID == "" && e.reply == nil }

func (e *refEntry) record() idempotency.Record {
	return idempotency.Record{
		MessageID:      e.messageID,
		TaskID:         e.taskID,
		Reply:          bytes.Clone(e.reply),
		ClaimedAt:      e.claimedAt,
		LeaseExpiresAt: e.leaseEnd,
	}
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
	if !ok {
		return nil, false
	}
	if x.ttl > 0 && !now.Before(e.claimedAt.Add(x.ttl)) {
		x.drop(k)
		return nil, false
	}
	return e, true
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

func (x *refIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Claim{}, err
	}
	if err := checkKey(key); err != nil {
		return idempotency.Claim{}, err
	}
	if messageID == "" {
		return idempotency.Claim{}, invalid("empty message id")
	}
	if lease <= 0 {
		return idempotency.Claim{}, invalid("lease %v is not positive", lease)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now, k := x.now(), refKey{scope, key}
	if e, ok := x.live(k, now); ok {
		switch {
		case e.messageID != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
		case e.pending() && !now.Before(e.leaseEnd):
			e.token = x.newToken()
			e.leaseEnd = now.Add(lease)
			return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: e.record()}, nil
	}
	if x.full(scope, now) {
		return idempotency.Claim{}, fmt.Errorf("refindex: scope %q: %w", scope, idempotency.ErrFull)
	}
	e := &refEntry{messageID: messageID, token: x.newToken(), claimedAt: now, leaseEnd: now.Add(lease)}
	x.put(k, e)
	return idempotency.Claim{Status: idempotency.Claimed, Token: e.token}, nil
}

func checkBinding(b idempotency.Binding) error {
	if b.TaskID == "" && len(b.Reply) == 0 {
		return invalid("a Binding needs a TaskID or a non-empty Reply")
	}
	return nil
}

func (x *refIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if token == 0 {
		return invalid("zero token")
	}
	if err := checkBinding(b); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.live(refKey{scope, key}, x.now())
	if !ok || e.token != token {
		return fmt.Errorf("refindex: bind: %w", idempotency.ErrNotOwner)
	}
	return bindEntry(e, b)
}

// bindEntry binds e to b, idempotently (b may be the bound value or a part of it);
// a task id alone may gain a reply.
func bindEntry(e *refEntry, b idempotency.Binding) error {
	same := (b.TaskID == "" || e.taskID == b.TaskID) && (len(b.Reply) == 0 || bytes.Equal(e.reply, b.Reply))
	switch {
	case same:
		return nil
	case e.pending(), e.taskID != "" && e.reply == nil && b.TaskID == e.taskID:
		e.taskID, e.reply = b.TaskID, nil
		if len(b.Reply) > 0 {
			e.reply = bytes.Clone(b.Reply)
		}
		return nil
	}
	return fmt.Errorf("refindex: bind: %w", idempotency.ErrAlreadyBound)
}

func (x *refIndex) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if token == 0 {
		return invalid("zero token")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	k := refKey{scope, key}
	e, ok := x.live(k, x.now())
	switch {
	case !ok:
		return nil
	case e.token != token:
		return fmt.Errorf("refindex: release: %w", idempotency.ErrNotOwner)
	case !e.pending():
		return nil // a bound key is never released
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
	e, ok := x.live(refKey{scope, key}, x.now())
	if !ok {
		return idempotency.Record{}, false, nil
	}
	return e.record(), true, nil
}

func (x *refIndex) HonoursKeys(context.Context) bool { return true }

func (x *refIndex) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Capacity{}, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return idempotency.Capacity{Held: x.held[scope], Limit: x.limit}, nil
}

func (x *refIndex) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	return x.purge(ctx, p, func(e *refEntry, now time.Time) bool {
		return !e.pending() || !now.Before(e.leaseEnd)
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
			return rep, err
		}
		n := x.purgeBatch(age, size, deletable)
		rep.Batches++
		rep.KeysDeleted += int64(n)
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
	now, n := x.now(), 0
	for k, e := range x.keys {
		if n == size {
			break
		}
		if now.Sub(e.claimedAt) >= age && deletable(e, now) {
			x.drop(k)
			n++
		}
	}
	return n
}
