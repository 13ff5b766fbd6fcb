package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

func (x *shardIndex) HonoursKeys(context.Context) bool { return true }

func (x *shardIndex) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := ctx.Err(); err != nil {
		return idempotency.Capacity{}, err
	}
	c := idempotency.Capacity{Held: int(x.count(scope).Load()), Limit: int(x.limit)}
	if x.bug == bugCapacityMissesEmptyScope && scope == "" {
		c.Held = 0
	}
	if x.bug == bugReportsNoLimit || x.bug == bugReportsNoDefaultLimit {
		c.Limit = 0
	}
	return c, nil
}

func (x *shardIndex) taskDeleted(taskID string) {
	if x.bug != bugForgetsDeletedTasks {
		return
	}
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		sh.each(func(e *shEntry) {
			if e.taskID == taskID {
				sh.del(e)
				x.unreserve(e.scope)
			}
		})
		sh.mu.Unlock()
	}
}

func (x *shardIndex) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	var rep idempotency.PurgeReport
	age, ok := p.EffectiveKeyMaxAge()
	if !ok {
		rep.Complete = true
		return rep, nil
	}
	age = min(age, x.ttl)
	size := p.EffectiveBatchSize()
	var collected []shPicked
	if x.bug == bugSweepCollectsFirst {
		collected = x.collect(age)
	}
	for p.MaxBatches <= 0 || rep.Batches < p.MaxBatches {
		if err := ctx.Err(); err != nil && (x.bug != bugSweepCtxOnce || rep.Batches == 0) {
			if x.bug == bugSweepLosesReportOnCancel {
				return idempotency.PurgeReport{}, err
			}
			return rep, fmt.Errorf("shardindex: purge: %w", err)
		}
		var n int
		if x.bug == bugSweepCollectsFirst {
			n = x.dropCollected(&collected, size)
		} else {
			n = x.purgeBatch(age, size)
		}
		rep.Batches++
		if x.bug == bugSweepReportsBatchSize {
			rep.KeysDeleted += int64(size)
		} else {
			rep.KeysDeleted += int64(n)
		}
		if n < size {
			rep.Complete = true
			return rep, nil
		}
	}
	return rep, nil
}

// deletable reports whether a sweep of the given age deletes e.
func (x *shardIndex) deletable(e *shEntry, age time.Duration, now time.Time) bool {
	old := now.Sub(e.claimedAt) >= age
	switch x.bug {
	case bugSweepsPendingClaims:
		return old
	case bugSweepsAbandonedYoung:
		return (old && !x.pending(e)) || (x.pending(e) && x.leaseEnded(e, now))
	}
	return old && (!x.pending(e) || x.leaseEnded(e, now))
}

func (x *shardIndex) purgeBatch(age time.Duration, size int) int {
	type picked struct {
		sh *shardPart
		e  *shEntry
	}
	var batch []picked
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		now := x.now()
		sh.each(func(e *shEntry) {
			if len(batch) < size && x.deletable(e, age, now) {
				batch = append(batch, picked{sh, e})
			}
		})
		if x.bug != bugSweepSnapshot {
			for _, p := range batch {
				if p.sh == sh {
					sh.del(p.e)
					x.unreserve(p.e.scope)
				}
			}
		}
		sh.mu.Unlock()
	}
	if x.bug == bugSweepSnapshot {
		// SELECT the keys, then DELETE them by key, judged once.
		time.Sleep(200 * time.Microsecond)
		for _, p := range batch {
			p.sh.mu.Lock()
			if e := p.sh.get(p.e.hash, p.e.mapKey); e != nil {
				p.sh.del(e)
				x.unreserve(e.scope)
			}
			p.sh.mu.Unlock()
		}
	}
	return len(batch)
}

// shPicked names an entry a sweep picked: its shard, hash and map key.
type shPicked struct {
	sh *shardPart
	h  uint64
	mk string
}

// collect returns the entries a sweep of the given age would delete now.
func (x *shardIndex) collect(age time.Duration) []shPicked {
	var ids []shPicked
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.Lock()
		now := x.now()
		sh.each(func(e *shEntry) {
			if x.deletable(e, age, now) {
				ids = append(ids, shPicked{sh, e.hash, e.mapKey})
			}
		})
		sh.mu.Unlock()
	}
	return ids
}

// dropCollected deletes up to size of the entries collected, by map key, without
// judging them again, one round trip later.
func (x *shardIndex) dropCollected(ids *[]shPicked, size int) int {
	time.Sleep(50 * time.Microsecond)
	n := min(size, len(*ids))
	for _, p := range (*ids)[:n] {
		p.sh.mu.Lock()
		if e := p.sh.get(p.h, p.mk); e != nil {
			p.sh.del(e)
			x.unreserve(e.scope)
		}
		p.sh.mu.Unlock()
	}
	*ids = (*ids)[n:]
	return n
}
