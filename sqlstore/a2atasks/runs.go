package a2atasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// StoppedText is the text of the status message of a task the store ended as failed
// because the process that ran it stopped (see the package documentation, "Runs").
const StoppedText = "The server stopped while this task ran, so it will not finish. " +
	"Send the message again with a new idempotency key to run it again."

// active reports whether an execution works on a task in state: the states whose
// runs the store watches.
func active(state a2a.TaskState) bool {
	return state == a2a.TaskStateSubmitted || state == a2a.TaskStateWorking
}

// runs watches the runs of this process: the active tasks stored in the context of
// an execution that is still going on. While any is watched, one goroutine renews
// their liveness every third of the lease, in one statement; when a run's context
// ends with its task still active, its liveness is cleared (the run ended in a live
// process: nothing is left to fail).
type runs struct {
	s     *Store
	lease time.Duration

	mu      sync.Mutex
	live    map[string]*run // task id → its watched run
	beating bool            // the heartbeat goroutine runs
}

// run is one watched run; stop cancels the hook on its context.
type run struct{ stop func() bool }

func newRuns(s *Store, lease time.Duration) *runs {
	return &runs{s: s, lease: lease, live: map[string]*run{}}
}

// watchable reports whether a task saved in state with ctx has a run to watch: it is
// active, and ctx ends (a2a-go saves a task in the context of its execution, which
// ends with the execution).
func (r *runs) watchable(ctx context.Context, state a2a.TaskState) bool {
	return active(state) && ctx.Done() != nil
}

// leaseArg returns the run lease parameter of a save: the lease in microseconds
// when the run is watched, or NULL.
func (r *runs) leaseArg(watch bool) any {
	if !watch {
		return nil
	}
	return r.lease.Microseconds()
}

// watch watches the run of taskID, whose context is ctx, unless it is watched.
func (r *runs) watch(ctx context.Context, taskID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[taskID]; ok {
		return
	}
	w := &run{}
	r.live[taskID] = w
	w.stop = context.AfterFunc(ctx, func() { r.ended(taskID, w) })
	if !r.beating {
		r.beating = true
		go r.beat()
	}
}

// forget stops watching taskID: its task left the active states.
func (r *runs) forget(taskID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.live[taskID]; ok {
		w.stop()
		delete(r.live, taskID)
	}
}

// ended is called when the context of run w of taskID ended with its task still
// active: the execution is over in this process, so its liveness is cleared.
func (r *runs) ended(taskID string, w *run) {
	r.mu.Lock()
	mine := r.live[taskID] == w
	if mine {
		delete(r.live, taskID)
	}
	r.mu.Unlock()
	if !mine {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.lease)
	defer cancel()
	if _, err := r.s.exec(ctx, r.s.q.unwatch, taskID); err != nil {
		// The liveness then ends on its own, and the task is ended as failed: the
		// run did end without finishing it.
		slog.Warn("a2atasks: could not record the end of a run; its task will be ended as failed once its liveness ends",
			"task_id", idempotency.LogValue(taskID), "error", err)
	}
}

// heartbeatBatch bounds the task ids of one heartbeat statement.
const heartbeatBatch = 500

// beat renews the liveness of the watched runs every third of the lease until none
// is watched.
func (r *runs) beat() {
	t := time.NewTicker(r.lease / 3)
	defer t.Stop()
	for range t.C {
		r.mu.Lock()
		ids := make([]string, 0, len(r.live))
		for id := range r.live {
			ids = append(ids, id)
		}
		if len(ids) == 0 {
			r.beating = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for len(ids) > 0 {
			n := min(len(ids), heartbeatBatch)
			r.renew(ids[:n])
			ids = ids[n:]
		}
	}
}

// renew renews the liveness of the runs of ids, within a third of the lease.
func (r *runs) renew(ids []string) {
	list, err := json.Marshal(ids)
	if err != nil {
		panic(err) // strings always encode
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.lease/3)
	defer cancel()
	if _, err := r.s.exec(ctx, r.s.q.heartbeat, string(list), r.lease.Microseconds(), r.s.nowArg()); err != nil {
		slog.Warn("a2atasks: could not renew the liveness of runs; they count as stopped if this lasts the run lease",
			"runs", len(ids), "run_lease", r.lease, "error", err)
	}
}

// endDead ends task (stored at version), whose run is dead, as failed with a status
// message saying that the server stopped while it ran. It returns the task as stored
// then and its version, or a nil task when the task changed since it was read.
func (s *Store) endDead(ctx context.Context, taskID string, task *a2a.Task, version int64) (*a2a.Task, int64, error) {
	if task.Status.Message != nil {
		task.History = append(task.History, task.Status.Message)
	}
	msg := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(StoppedText))
	msg.TaskID, msg.ContextID = task.ID, task.ContextID
	now := time.Now()
	if s.now != nil {
		now = s.now()
	}
	now = now.UTC()
	task.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Message: msg, Timestamp: &now}
	body, err := json.Marshal(task)
	if err != nil {
		return nil, 0, fmt.Errorf("a2atasks: end a stopped task: encode task: %w", err)
	}
	var v int64
	switch err := s.queryRow(ctx, s.q.fail, []any{taskID, version, nanos(now), body, s.nowArg()}, &v); {
	case err == nil:
		return task, v, nil
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, nil
	default:
		return nil, 0, s.fail(ctx, "end a stopped task", err)
	}
}

// EndStopped ends, as failed, the tasks left active by runs that stopped: runs the
// store watched (see the package documentation, "Runs") whose liveness ended
// [Options.RunLease] or more after their last heartbeat. Each task gets the state
// TASK_STATE_FAILED and a status message from the agent with [StoppedText]; its
// previous status message joins its history, as a2a-go does on a status update.
// It works in batches of at most batch tasks (batch ≤ 0: 1000) until none is left or
// ctx ends, and returns how many it ended. [Store.PurgeExpired] calls it, and so does
// [Store.Get] for the task it reads.
func (s *Store) EndStopped(ctx context.Context, batch int) (int64, error) {
	if batch <= 0 {
		batch = 1000
	}
	var ended int64
	for {
		if err := ctx.Err(); err != nil {
			return ended, err
		}
		type row struct {
			id      string
			body    []byte
			version int64
		}
		rows, err := sqlrun.Query(ctx, s.db, s.dialect == sqlstore.SQLite, s.q.dead, []any{s.nowArg(), batch},
			func(r *row) []any { return []any{&r.id, &r.body, &r.version} })
		if err != nil {
			return ended, s.fail(ctx, "end stopped tasks", err)
		}
		for _, r := range rows {
			task, err := decodeTask(r.body)
			if err != nil {
				return ended, err
			}
			done, _, err := s.endDead(ctx, r.id, task, r.version)
			if err != nil {
				return ended, err
			}
			if done != nil {
				ended++
			}
		}
		if len(rows) < batch {
			return ended, nil
		}
	}
}

// Restarted is for the start of the only process that runs the sends of this store's
// tables, before it serves (the process it replaces, after a crash or a stop, is
// gone): it ends every task left active by a watched run as failed at once, as
// [Store.EndStopped] would once their liveness ended, and, with [Options.Keys], ends
// the lease of every pending claim ([sqlstore.Store.EndLeases]), so that an identical
// retry of a send that died before its task was stored runs at once instead of once
// the lease has ended. It returns how many tasks it ended and how many leases.
//
// Never call it while another process may run sends on these tables (replicas, a
// rolling deploy, a2a-go's cluster mode): their runs would be ended as failed while
// they go on, and their claims taken over.
func (s *Store) Restarted(ctx context.Context) (tasks, leases int64, err error) {
	if _, err := s.exec(ctx, s.q.stopAll, s.nowArg()); err != nil {
		return 0, 0, s.fail(ctx, "restarted: end the liveness of runs", err)
	}
	if tasks, err = s.EndStopped(ctx, 0); err != nil {
		return tasks, 0, err
	}
	if s.keys != nil {
		leases, err = s.keys.EndLeases(ctx)
	}
	return tasks, leases, err
}
