package conformance

import (
	"context"
	"time"

	"github.com/a2akit/idempotency"
)

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
	if x.bug == bugReportsNoLimit || x.bug == bugReportsNoDefaultLimit {
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
	var collected []refKey
	if x.bug == bugSweepCollectsFirst {
		collected = x.collect(age, deletable)
	}
	for p.MaxBatches <= 0 || rep.Batches < p.MaxBatches {
		if err := ctx.Err(); err != nil && (x.bug != bugSweepCtxOnce || rep.Batches == 0) {
			if x.bug == bugSweepLosesReportOnCancel {
				return idempotency.PurgeReport{}, err
			}
			return rep, err
		}
		var n int
		if x.bug == bugSweepCollectsFirst {
			n = x.dropCollected(&collected, size)
		} else {
			n = x.purgeBatch(age, size, deletable)
		}
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
		apart(&x.mu, 200*time.Microsecond) // SELECT the keys, then DELETE them by key, judged once
	}
	for _, k := range batch {
		x.drop(k)
	}
	return len(batch)
}

// collect returns the keys a sweep of the given age would delete now.
func (x *refIndex) collect(age time.Duration, deletable func(e *refEntry, now time.Time) bool) []refKey {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	var ids []refKey
	for k, e := range x.keys {
		if now.Sub(e.claimedAt) >= age && deletable(e, now) {
			ids = append(ids, k)
		}
	}
	return ids
}

// dropCollected deletes up to size of the keys collected, by key, without judging
// them again, one round trip later.
func (x *refIndex) dropCollected(ids *[]refKey, size int) int {
	time.Sleep(50 * time.Microsecond)
	x.mu.Lock()
	defer x.mu.Unlock()
	n := min(size, len(*ids))
	for _, k := range (*ids)[:n] {
		x.drop(k)
	}
	*ids = (*ids)[n:]
	return n
}
