package memstore

import (
	"context"
	"fmt"

	"github.com/a2akit/idempotency"
)

// PurgeExpired implements [idempotency.Sweeper]. It deletes the keys that are at least
// the policy's effective key age old ([idempotency.RetentionPolicy.EffectiveKeyMaxAge]),
// and the keys past the store's TTL, which already count as absent; a pending claim
// whose lease is still running is never deleted. When the policy disables the key
// sweep (a negative KeyMaxAge), it deletes nothing and reports a complete sweep.
//
// Ages are measured against one reading of the clock, taken when the call starts.
// A batch deletes up to the policy's batch size; the report counts the batches that
// deleted keys, and is complete when no key that the sweep would delete is left.
// Claims, binds and lookups of other keys proceed while it runs: it holds one shard's
// lock at a time.
func (s *Store) PurgeExpired(ctx context.Context, policy idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	var rep idempotency.PurgeReport
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("memstore: purge: %w", err)
	}
	age, ok := policy.EffectiveKeyMaxAge()
	if !ok {
		rep.Complete = true
		return rep, nil
	}
	p := purge{
		now:    s.clock(),
		maxAge: min(int64(age), s.ttl),
		size:   int64(policy.EffectiveBatchSize()),
	}
	for {
		if policy.MaxBatches > 0 && rep.Batches >= policy.MaxBatches {
			return rep, nil
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("memstore: purge: %w", err)
		}
		n, more := s.purgeBatch(&p)
		if n > 0 {
			rep.Batches++
			rep.KeysDeleted += n
		}
		if !more {
			rep.Complete = true
			return rep, nil
		}
	}
}

// purge is the state of one PurgeExpired call.
type purge struct {
	now    int64
	maxAge int64
	size   int64
	shard  int // shards before this one hold nothing to delete
}

// purgeable reports whether p deletes e.
func (p *purge) purgeable(e *entry) bool {
	cutoff := p.now - p.maxAge
	if cutoff > p.now || e.claimedAt > cutoff { // young, or the subtraction overflowed
		return false
	}
	return !e.pending() || p.now >= e.leaseEnd
}

// purgeBatch deletes up to p.size keys, and reports whether more are left to delete.
func (s *Store) purgeBatch(p *purge) (deleted int64, more bool) {
	for ; p.shard < numShards; p.shard++ {
		sh := &s.shards[p.shard]
		sh.mu.Lock()
		n := deleted
		sh.each(func(e *entry) bool {
			if !p.purgeable(e) {
				return true
			}
			if deleted == p.size {
				more = true
				return false
			}
			s.remove(sh, e)
			deleted++
			return true
		})
		if deleted > n {
			sh.compact()
			sh.tidy()
		}
		sh.mu.Unlock()
		if more {
			return deleted, true
		}
	}
	return deleted, false
}
