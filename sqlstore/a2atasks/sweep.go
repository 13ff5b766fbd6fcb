package a2atasks

import (
	"context"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

var _ idempotency.Sweeper = (*Store)(nil)

// Migrate creates the key table of [Options.Keys] (when set, with
// [sqlstore.Store.Migrate]), then the task table and its two indexes when they do not
// exist; it changes nothing that exists. It is safe to run from several processes at
// once: on PostgreSQL the task DDL runs in one transaction under an advisory lock
// derived from the table name; on SQLite each statement runs under SQLite's write
// lock. There is no foreign key between the two tables, and nothing cascades.
func (s *Store) Migrate(ctx context.Context) error {
	if s.keys != nil {
		if err := s.keys.Migrate(ctx); err != nil {
			return err
		}
	}
	sqlite := s.dialect == sqlstore.SQLite
	if step, err := sqlrun.Migrate(ctx, s.db, sqlite, s.q.lockKey, s.q.migrate); err != nil {
		return s.fail(ctx, step, err)
	}
	stmts := append([]string{s.q.addColumn}, s.q.migrateRuns...)
	if sqlite {
		var has int
		if err := s.queryRow(ctx, s.q.hasColumn, nil, &has); err != nil {
			return s.fail(ctx, "migrate: read columns", err)
		}
		if has > 0 {
			stmts = stmts[1:]
		}
	}
	if step, err := sqlrun.Migrate(ctx, s.db, sqlite, s.q.lockKey, stmts); err != nil {
		return s.fail(ctx, step, err)
	}
	return nil
}

// PurgeExpired implements [idempotency.Sweeper] over both tables: first it ends the
// tasks of stopped runs as failed ([Store.EndStopped]; not counted in the report),
// then it deletes the
// terminal tasks (completed, canceled, failed, rejected) last updated at least
// policy.TerminalTaskRetention ago (none when that is zero or less: tasks are then kept),
// then, when [Options.Keys] is set, it runs the key sweep,
// [sqlstore.Store.PurgeExpired], which deletes the keys older than
// policy.EffectiveKeyMaxAge() (at least the task retention) but never a key bound to
// a task still in this table. So a key is never deleted while its task may still
// exist, and a retry of a swept task's key finds no key and no task, or the key and no
// task (TaskNotFound); never a second run. A task that never reaches a terminal state
// is never deleted, nor is its key.
//
// Each batch is one short DELETE of at most policy.EffectiveBatchSize() rows, through
// the index of terminal tasks by update time; policy.MaxBatches bounds the batches of
// each table separately. The report adds up both sweeps: TasksDeleted, KeysDeleted,
// Batches, and Complete when both ran out of rows to delete. Age is judged by the
// store's clock. Several processes may sweep at once: on PostgreSQL batches skip rows
// another sweep has locked (FOR UPDATE SKIP LOCKED); on SQLite they queue on the write
// lock. ctx is checked between batches: when it ends, the report so far is returned
// with ctx's error.
func (s *Store) PurgeExpired(ctx context.Context, policy idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	r := idempotency.PurgeReport{Complete: true}
	if _, err := s.EndStopped(ctx, policy.EffectiveBatchSize()); err != nil {
		return r, err
	}
	if keep := policy.TerminalTaskRetention; keep > 0 {
		var err error
		if r, err = s.purgeTasks(ctx, keep.Microseconds(), policy); err != nil {
			return r, err
		}
	}
	if s.keys == nil {
		return r, nil
	}
	kr, err := s.keys.PurgeExpired(ctx, policy)
	r.KeysDeleted += kr.KeysDeleted
	r.Batches += kr.Batches
	r.Complete = r.Complete && kr.Complete
	return r, err
}

func (s *Store) purgeTasks(ctx context.Context, keepMicros int64, policy idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	var r idempotency.PurgeReport
	size := policy.EffectiveBatchSize()
	var err error
	r.TasksDeleted, r.Batches, r.Complete, err = sqlrun.Purge(ctx, "a2atasks", size, policy.MaxBatches,
		func() (int64, error) { return s.exec(ctx, s.q.purge, s.nowArg(), keepMicros, size) },
		func() (bool, error) {
			var left bool
			err := s.queryRow(ctx, s.q.purgeLeft, []any{s.nowArg(), keepMicros}, &left)
			return left, err
		})
	return r, err
}
