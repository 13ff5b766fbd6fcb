// Package a2atasks is a SQL task store for a2a-go (github.com/a2aproject/a2a-go/v2):
// an implementation of a2asrv/taskstore.Store on SQLite or PostgreSQL, meant to live
// in the same database as the idempotency keys of [sqlstore], so that a retry after a
// restart, or on another replica sharing the database, finds the task its key names.
// It is a package of its own so that programs that only want keys do not import
// a2a-go.
//
// # Use
//
// Open the database once (a *sql.DB or a *sqlx.DB, with the driver of your choice),
// create the key store with [sqlstore.Options.TaskTable] naming the task table, the
// task store with [Options.Keys], migrate both with [Store.Migrate], and give the task
// store to a2asrv:
//
//	keys, err := sqlstore.New(db, sqlstore.Options{TaskTable: a2atasks.DefaultTable})
//	tasks, err := a2atasks.New(db, a2atasks.Options{Keys: keys})
//	err = tasks.Migrate(ctx)
//	handler := a2asrv.NewHandler(agent, a2asrv.WithTaskStore(tasks))
//	// … and the idempotency middleware with keys as its KeyIndex.
//
// Run [Store.PurgeExpired] from a timer: one sweep over both tables. To answer
// retries from the store (adapter.NewTaskReader(tasks, …) as the middleware's Tasks),
// give the TaskReader a User that reproduces the owner the server's authentication
// sets: the default [Options.Authenticator] reads the owner from the a2asrv
// CallContext, as a2a-go's own store does.
//
// # Semantics
//
// The store does what a2a-go's own taskstore.InMemory does, and the package's tests run
// the same cases on both and require the same answers, byte for byte: Create refuses an
// existing id with taskstore.ErrTaskAlreadyExists; Update with a PrevVersion other
// than taskstore.TaskVersionMissing succeeds only when the stored version is that one,
// and otherwise fails with taskstore.ErrConcurrentModification, so concurrent updates
// from one version, in any number of processes, have exactly one winner; Get and
// Update see only the tasks of the caller's owner ([Options.Authenticator]); List
// filters by owner, context id, state and status timestamp, orders by last update,
// pages with a2a-go's page token format, and cuts histories and artifacts alike.
// Tasks are stored as their JSON encoding, verbatim: a task read back encodes to the
// same bytes. The tenant of the call (a2a.TenantFrom) is recorded beside the owner;
// like a2a-go's store, this one does not filter by it.
//
// # Schema
//
// [Store.Migrate] creates one table (default [DefaultTable]) and two indexes:
//
//	id          TEXT (COLLATE "C" on PostgreSQL) PRIMARY KEY -- the task id
//	context_id  TEXT NOT NULL   -- the task's context id (List filter)
//	state       TEXT NOT NULL   -- the task's state, e.g. TASK_STATE_COMPLETED
//	status_ns   BIGINT NULL     -- the status timestamp, ns since the Unix epoch
//	owner       TEXT NOT NULL   -- the Authenticator's name at Create
//	tenant      TEXT NOT NULL   -- the call's tenant at Create ("" when none)
//	version     BIGINT NOT NULL -- 1 at Create, one more at every Update
//	task        BYTEA / BLOB NOT NULL -- the task's JSON
//	created_at, updated_at  TIMESTAMPTZ / INTEGER (µs) NOT NULL
//	alive_until TIMESTAMPTZ / INTEGER (µs) NULL -- the end of the liveness of the task's watched run
//	INDEX <table>_list_idx  ON (owner, updated_at DESC, id DESC)
//	INDEX <table>_sweep_idx ON (updated_at) WHERE state is terminal
//	INDEX <table>_runs_idx  ON (alive_until) WHERE alive_until IS NOT NULL
//
// Migrate adds alive_until to a table made before it existed.
//
// There is no foreign key between the task table and the key table, in either
// direction, and nothing cascades: a key outlives its task on purpose, so that a retry
// of a send whose task was swept learns that the task is gone (TaskNotFound) instead
// of running the agent again.
//
// # Keys bound when their task is stored
//
// With [Options.Keys] (the key index the idempotency middleware uses), the first save
// of a task in the context of a keyed first send (a2a-go saves a task in the context
// of its execution, which carries the middleware's claim, middleware.ClaimedSend)
// stores the task and binds the send's key to it in one transaction: both commit, or
// neither does. A key therefore never names a task that was not stored: a process
// that dies before the first save (or an agent that fails before its first event)
// leaves the claim pending or released, and the identical retry runs the agent; one
// that dies after it leaves the task, which retries get. When the bind fails (the
// claim was taken over, the index failed), Create fails and stores nothing.
//
// # Runs
//
// A task saved in an active state (SUBMITTED or WORKING) in the context of an
// execution (a context that ends: a2a-go's execution context ends with the
// execution) has a watched run: alive_until is set to now plus [Options.RunLease],
// and while the context lasts the store renews it every third of RunLease (one
// statement for all the runs of the process). It is cleared when the task leaves the
// active states (terminal, or waiting for input) and when the context ends with the
// task still active (the run ended in a live process). So a watched run whose
// alive_until has passed belongs to a process that stopped, and nothing will ever
// finish its task: [Store.Get] (which answers retries, through adapter.TaskReader or
// a2a-go's GetTask) ends such a task before returning it, and so does the sweep
// ([Store.EndStopped], run by [Store.PurgeExpired]): the task becomes
// TASK_STATE_FAILED with a status message from the agent, [StoppedText]. The end is
// one UPDATE guarded by the version read and the liveness, so a run that renews or
// saves in between keeps its task. A process that lost the database for a whole
// RunLease counts as stopped: its task is ended, and its later saves fail on the
// version. The only process that runs a store's sends calls [Store.Restarted] as it
// starts, which ends what its predecessor left at once (tasks and, with Keys, the
// leases of pending claims).
//
// # Statements
//
// Create is one INSERT … ON CONFLICT DO NOTHING (with a key to bind: BEGIN, the
// INSERT, the key's UPDATE, COMMIT); Update one UPDATE … RETURNING guarded by the
// owner and the version (one SELECT more only when it changes nothing, to tell a
// missing task from a lost race); Get one SELECT (one UPDATE more for a task whose
// run stopped); List two (the page, the count). The heartbeat is one UPDATE per third
// of RunLease for all the watched runs of a Store.
//
// # Retention
//
// [Store.PurgeExpired] ends the tasks of stopped runs (see "Runs"), deletes terminal
// tasks older than the policy's TerminalTaskRetention, then the keys older than max(key age, task retention) whose
// task is no longer in the table: a key is never deleted while its task may still
// exist. Set the key store's TTL ([sqlstore.Options.TTL]) to at least the task
// retention, so that a key keeps deduplicating for as long as its task is kept.
//
// # Cluster mode
//
// a2a-go's cluster mode (a2asrv.WithClusterMode, experimental in v2.4.0) takes a
// ClusterConfig of a TaskStore, a WorkQueue, a QueueManager and a ContextCodec. This
// store is a TaskStore cluster mode can use: every replica reads every task, and
// updates are guarded by PrevVersion across processes, which cluster mode relies on
// (a2a-go's event processor treats ErrConcurrentModification as "another worker moved
// the task": it reloads the task and stops unless the task is terminal). The kit gives
// nothing else cluster mode needs:
//
//   - a durable work queue (workqueue.Queue) that hands each execution to one worker,
//     with leases, heartbeats and retries: a2a-go ships an in-memory queue and
//     adapters (workqueue.NewPullQueue, workqueue.NewPushQueue) around a broker the
//     operator provides;
//   - an eventqueue.Manager whose queues reach every replica, so that a stream or a
//     blocking send on one replica sees the events of an execution on another: a2a-go
//     ships an in-memory manager and eventqueue.NewPullQueueManager around a puller the
//     operator provides;
//   - a ContextCodec for the call context (user, tenant, service parameters) the
//     queue carries to the worker, and push-notification config storage shared by
//     the replicas.
//
// The package's tests run two replicas in cluster mode, each with its own pool on one
// database, over a2a-go's in-memory queue and manager shared in one process: a send
// accepted by one replica is run by the other, and its retries on either get the
// task from this store. With the middleware in front of a replica in cluster mode,
// leave its SoleInstance option off: the execution of a send runs on another worker.
//
// Without cluster mode, each replica runs the executions it receives, and the shared
// task store lets every replica read every task.
package a2atasks
