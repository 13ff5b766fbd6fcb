package middleware

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2akit/idempotency"
)

// The engine's "replaying" state, for a key whose first attempt bound a task: the
// task is read (by the binding, through read), and a task not found yet is waited
// for while something may still run the first attempt.

// awaitTask reads the task of rec with readOnce, which returns nil when it found the
// task. A task that is not found may be coming or gone: a2a-go stores a task only at
// the agent's first event, and the adapter binds the key before the agent starts.
// While the claim is younger than the lease, awaitTask looks for it again until
// ReplayWait ends, and at the index too, since an agent that answers with a Message
// creates no task at all and its reply is recorded when it answers (that reply is
// returned); then missingTask says which it is.
func (c core) awaitTask(ctx context.Context, send *Send, rec idempotency.Record, readOnce func() *failure, running func(taskID string) bool) ([]byte, *failure) {
	deadline := time.Now().Add(c.replayWait)
	interval := 10 * time.Millisecond
	for {
		f := readOnce()
		switch {
		case f == nil:
			return nil, nil
		case !f.notFound():
			if f.kind == failUnavailable {
				c.logSend(ctx, send, slog.LevelWarn, "idempotency: could not read the key's task for a retry",
					slog.String("task_id", idempotency.LogValue(rec.TaskID)), slog.String("error", f.message))
			}
			return nil, f
		case time.Since(rec.ClaimedAt) >= c.lease || time.Until(deadline) <= 0:
			return nil, c.missingTask(ctx, send, rec, f, running)
		}
		waited := time.Now()
		timer := time.NewTimer(min(interval, time.Until(deadline)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			since(&send.t.wait, waited)
			return nil, f
		}
		since(&send.t.wait, waited)
		interval = min(2*interval, 250*time.Millisecond)
		got, found, err := c.lookup(ctx, send.k, &send.t)
		if err == nil && found && got.MessageID == send.k.messageID && got.Reply != nil {
			return got.Reply, nil
		}
	}
}

// maxTaskComingRetryAfter caps the Retry-After of a retry whose key is bound to a task
// not stored yet: the task usually comes long before the claim is as old as the lease.
const maxTaskComingRetryAfter = 10 * time.Second

// missingTask answers a retry whose key is bound to a task that is not found
// (notFound, the TaskNotFound failure): 409 while something may still run the
// first attempt and store the task, TaskNotFound once nothing can. What may run it:
//
//   - an execution of the task in this process, at any age of the claim (an agent
//     may be slower to its first event than the lease): running (a subscription, for
//     the HTTP middleware's executionRunning) tells; nil counts as not running;
//   - an execution in another process sharing the index (a replica, or the process
//     a rolling restart replaces), which cannot be asked: it counts as possible
//     until the claim is as old as the lease, the bound Options.Lease sets on an
//     agent's time to its first event, unless Options.SoleInstance says that no
//     other process runs keyed sends. A restarted sole instance thus answers
//     TaskNotFound at once for the sends its previous process died in before their
//     first event.
//
// Logs name the time left until the task counts as gone.
func (c core) missingTask(ctx context.Context, send *Send, rec idempotency.Record, notFound *failure, running func(taskID string) bool) *failure {
	taskID := slog.String("task_id", idempotency.LogValue(rec.TaskID))
	if running != nil && running(rec.TaskID) {
		c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not stored yet and its execution running here; retry answered 409",
			taskID)
		return &failure{kind: failInFlight, message: msgInFlight, retryAfter: time.Second}
	}
	left := time.Until(rec.ClaimedAt.Add(c.lease))
	if left > 0 && !c.soleInstance {
		retry := max(min(left, maxTaskComingRetryAfter), time.Second)
		c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not stored and its execution not running here; "+
			"another process may still run it until the lease ends; retry answered 409",
			taskID, slog.Duration("lease_left", left.Round(time.Millisecond)), slog.Duration("retry_after", retry))
		return &failure{kind: failInFlight, message: msgMaybeElsewhere, retryAfter: retry}
	}
	why := "the claim is older than the lease"
	if left > 0 {
		why = "no other process runs keyed sends (SoleInstance)"
	}
	c.logSend(ctx, send, slog.LevelInfo, "idempotency: key bound, its task not found and nothing runs it; retry answered TaskNotFound",
		taskID, slog.String("because", why))
	return notFound
}

// taskSourceFailure returns the failure of a read of task taskID that returned err,
// or nil. What a task source fails with describes its store (host names, SQL): it
// goes to the log, and the client gets what it can act on.
func (c core) taskSourceFailure(ctx context.Context, send *Send, taskID string, err error) *failure {
	switch {
	case err == nil:
		return nil
	case errNotFound(err):
		c.logSend(ctx, send, slog.LevelDebug, "idempotency: the key's task was not found by the task source",
			slog.String("task_id", idempotency.LogValue(taskID)), slog.Any("error", err))
		return &failure{kind: failTaskNotFound, message: "the task of this idempotency key no longer exists; " +
			"the agent is not run again for the same key, so send a new message with a fresh key"}
	}
	c.logSend(ctx, send, slog.LevelWarn, "idempotency: the task source could not read the key's task for a replay",
		slog.String("task_id", idempotency.LogValue(taskID)), slog.Any("error", err))
	return &failure{kind: failUnavailable, message: "the task of this idempotency key could not be read; " +
		"retry with the same key and message later", retryAfter: defaultRetryAfter}
}
