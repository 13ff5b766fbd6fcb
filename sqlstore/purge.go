package sqlstore

import (
	"context"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// PurgeExpired implements [idempotency.Sweeper]: it deletes the keys whose first claim
// is at least policy.EffectiveKeyMaxAge() old, and the keys past the store's TTL (which
// already count as absent), except pending claims whose lease is still running. When
// the policy disables the key sweep (a negative KeyMaxAge), it deletes nothing and
// reports a complete sweep.
//
// Each batch is one short DELETE of at most policy.EffectiveBatchSize() rows, picked
// through the claimed_at index, so the table is never locked for long and claims go on
// between batches. Age and lease are judged by the store's clock (see the package
// documentation, "Clocks"), read anew by each batch. A policy age shorter than the
// store's TTL deletes keys that would still have deduplicated a retry.
//
// The report counts the batches that deleted at least one key, and the keys deleted by
// this call. The sweep is complete when a batch deleted fewer rows than the batch size.
// When policy.MaxBatches stops it, one more SELECT tells whether any key was left, so
// Complete is accurate either way. ctx is checked between batches: when it ends, the
// report so far is returned with ctx's error.
//
// Several processes may sweep at once. On PostgreSQL a batch skips rows that another
// sweep has locked (FOR UPDATE SKIP LOCKED), so concurrent sweeps share the work, and a
// sweep may report Complete while another is still deleting the rows it skipped. On
// SQLite, batches from several processes queue on the write lock.
func (s *Store) PurgeExpired(ctx context.Context, policy idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	var r idempotency.PurgeReport
	age, ok := policy.EffectiveKeyMaxAge()
	if !ok {
		r.Complete = true
		return r, nil
	}
	ageMicros := min(age, s.ttl).Microseconds()
	size := policy.EffectiveBatchSize()
	var err error
	r.KeysDeleted, r.Batches, r.Complete, err = sqlrun.Purge(ctx, "sqlstore", size, policy.MaxBatches,
		func() (int64, error) { return s.exec(ctx, s.q.purge, s.args(ageMicros, size)...) },
		func() (bool, error) {
			var left bool
			err := s.queryRow(ctx, s.q.purgeLeft, s.args(ageMicros), &left)
			return left, err
		})
	return r, err
}
