package a2atasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// DefaultTable is the table a [Store] uses unless [Options.Table] names another.
const DefaultTable = "a2a_tasks"

// Options configure a [Store]. The zero value works: every field has a default.
type Options struct {
	// Table is the task table, optionally schema-qualified, with the rules of
	// [sqlstore.Options.Table]; default [DefaultTable].
	Table string

	// Dialect is the SQL dialect; by default it is told from the database handle, as
	// [sqlstore.DialectOf] does.
	Dialect sqlstore.Dialect

	// Authenticator names the owner of the task a call is about, as in a2a-go's
	// taskstore.InMemoryStoreConfig: Create records it, and Update, Get and List see
	// only the tasks of the caller's owner. Default a2asrv.NewTaskStoreAuthenticator(),
	// the authenticator a2asrv.NewHandler gives its own in-memory store (the user of
	// the call's a2asrv.CallContext).
	Authenticator taskstore.Authenticator

	// Keys, when set, is the key index in the same database whose keys name this
	// store's tasks. It must have been created with sqlstore.Options.TaskTable set to
	// this store's table. [Store.Migrate] then creates the key table too, and
	// [Store.PurgeExpired] sweeps the keys after the tasks.
	Keys *sqlstore.Store

	// Now, when set, is the clock of every time the store writes or compares (update
	// times, sweep cutoffs). When nil, the database's clock is read inside each
	// statement, as in the key store (see sqlstore's package documentation, "Clocks").
	Now func() time.Time

	// RunLease is how long the liveness of a watched run lasts without a heartbeat
	// (see the package documentation, "Runs"): the store renews it every third of
	// RunLease while the run goes on, and a task left active by a process that
	// stopped is ended as failed once RunLease has passed since its last heartbeat.
	// Default [DefaultRunLease]; it must be at least a millisecond.
	RunLease time.Duration
}

// DefaultRunLease is the [Options.RunLease] of a Store that sets none.
const DefaultRunLease = 30 * time.Second

// Store is an a2a-go [taskstore.Store] on a SQL table, and an [idempotency.Sweeper]
// of its terminal tasks (and of the keys of [Options.Keys]). Create it with [New]; it
// is safe for concurrent use, and any number of Stores, in one process or many, may
// share one table.
//
// [idempotency.Sweeper]: https://pkg.go.dev/github.com/a2akit/idempotency#Sweeper
type Store struct {
	db      sqlstore.DB
	dialect sqlstore.Dialect
	table   string
	auth    taskstore.Authenticator
	keys    *sqlstore.Store
	now     func() time.Time
	q       queries
	runs    *runs
}

var _ taskstore.Store = (*Store)(nil)

// New returns a Store on db (a *sql.DB or a *sqlx.DB), which must stay open while the
// Store is used. It checks opts and builds the store's SQL, but does not touch the
// database: call [Store.Migrate] to create the table. A dialect that cannot be told
// from db with no explicit [Options.Dialect], a malformed table name, or [Options.Keys]
// on another dialect or naming another task table is an error.
func New(db sqlstore.DB, opts Options) (*Store, error) {
	if sqlrun.IsNil(db) {
		return nil, errors.New("a2atasks: nil database handle")
	}
	d := opts.Dialect
	if d == sqlstore.DetectDialect {
		var ok bool
		if d, ok = sqlstore.DialectOf(db); !ok {
			return nil, fmt.Errorf("a2atasks: cannot tell the SQL dialect of driver %q: set Options.Dialect", sqlrun.DriverName(db))
		}
	}
	if d != sqlstore.SQLite && d != sqlstore.PostgreSQL {
		return nil, fmt.Errorf("a2atasks: unknown %v", d)
	}
	table := opts.Table
	if table == "" {
		table = DefaultTable
	}
	schema, name, err := sqlrun.ParseTable(table)
	if err != nil {
		return nil, fmt.Errorf("a2atasks: %w", err)
	}
	if k := opts.Keys; k != nil {
		if k.Dialect() != d {
			return nil, fmt.Errorf("a2atasks: Options.Keys speaks %v, this store %v", k.Dialect(), d)
		}
		if k.TaskTable() != table {
			return nil, fmt.Errorf("a2atasks: Options.Keys must be created with sqlstore.Options{TaskTable: %q}, so that its sweep keeps the keys of tasks still here (it has %q)", table, k.TaskTable())
		}
	}
	auth := opts.Authenticator
	if auth == nil {
		auth = a2asrv.NewTaskStoreAuthenticator()
	}
	lease := opts.RunLease
	switch {
	case lease == 0:
		lease = DefaultRunLease
	case lease < time.Millisecond:
		return nil, fmt.Errorf("a2atasks: RunLease %v is below a millisecond", lease)
	}
	s := &Store{
		db: db, dialect: d, table: table, auth: auth, keys: opts.Keys, now: opts.Now,
		q: buildQueries(d, schema, name),
	}
	s.runs = newRuns(s, lease)
	return s, nil
}

// Table returns the name of the task table, as configured.
func (s *Store) Table() string { return s.table }

// Create implements [taskstore.Store.Create] with one INSERT … ON CONFLICT DO NOTHING.
// The task is stored as its JSON encoding, verbatim, with its owner (from
// [Options.Authenticator]) and the call's tenant (a2a.TenantFrom); the first version
// is 1. A task id already stored is [taskstore.ErrTaskAlreadyExists]; a task whose
// metadata a2a-go's own store refuses is refused alike.
func (s *Store) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	if task == nil {
		return taskstore.TaskVersionMissing, errors.New("a2atasks: create: nil task")
	}
	if err := validateTask(task); err != nil {
		return taskstore.TaskVersionMissing, err
	}
	owner, err := s.auth(ctx)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("taskstore auth failed: %w", err)
	}
	body, err := json.Marshal(task)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2atasks: create: encode task: %w", err)
	}
	tenant, _ := a2a.TenantFrom(ctx)
	watch := s.runs.watchable(ctx, task.Status.State)
	args := []any{string(task.ID), task.ContextID, string(task.Status.State),
		statusNanos(task), owner, tenant, body, s.nowArg(), s.runs.leaseArg(watch)}
	var n int64
	if claim, ok := middleware.ClaimedSendFrom(ctx); ok && s.keys != nil {
		if _, bound := claim.Bound(); !bound {
			n, err = s.createBound(ctx, claim, string(task.ID), args)
			if err != nil {
				return taskstore.TaskVersionMissing, err
			}
			if n == 0 {
				return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
			}
			if watch {
				s.runs.watch(ctx, string(task.ID))
			}
			return 1, nil
		}
	}
	n, err = s.exec(ctx, s.q.create, args...)
	switch {
	case err != nil:
		return taskstore.TaskVersionMissing, s.fail(ctx, "create", err)
	case n == 0:
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	if watch {
		s.runs.watch(ctx, string(task.ID))
	}
	return 1, nil
}

// createTx is one attempt at createBound's transaction; it sets *n to the rows the
// create affected.
func (s *Store) createTx(ctx context.Context, claim *middleware.ClaimedSend, token idempotency.Token, taskID string, args []any, n *int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, "create: begin", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if *n, err = sqlrun.Exec(ctx, tx, s.dialect == sqlstore.SQLite, s.q.create, args...); err != nil {
		return s.fail(ctx, "create", err)
	}
	if *n == 0 {
		return errTaskTaken
	}
	if err := s.keys.BindTx(ctx, tx, claim.Scope(), claim.Key(), token, idempotency.Binding{TaskID: taskID}); err != nil {
		return fmt.Errorf("a2atasks: create: bind the send's idempotency key to the task: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, "create: commit", err)
	}
	return nil
}

// errTaskTaken rolls back the transaction of createBound when the task id is taken.
var errTaskTaken = errors.New("a2atasks: task id taken")

// createBound runs the create statement (args) and binds claim's key to taskID in
// one transaction, through the claim (so the middleware knows the key is bound). It
// returns the rows the create affected: 0 when the id is taken, and then nothing
// was bound. When the bind fails, nothing was stored either.
func (s *Store) createBound(ctx context.Context, claim *middleware.ClaimedSend, taskID string, args []any) (int64, error) {
	var n int64
	err := claim.BindWith(ctx, idempotency.Binding{TaskID: taskID}, func(ctx context.Context, token idempotency.Token) error {
		// A transaction that found SQLite locked (at BEGIN IMMEDIATE, or at its first
		// write) is rolled back and run again.
		return sqlrun.RetryBusy(ctx, s.dialect == sqlstore.SQLite, func() error {
			return s.createTx(ctx, claim, token, taskID, args, &n)
		})
	})
	if errors.Is(err, errTaskTaken) {
		return 0, nil
	}
	return n, err
}

// Update implements [taskstore.Store.Update] with one UPDATE … RETURNING, guarded by
// the owner and, unless req.PrevVersion is [taskstore.TaskVersionMissing], by the
// stored version: concurrent updates from the same version, in any number of
// processes, have exactly one winner, and the others get
// [taskstore.ErrConcurrentModification]. When it changes nothing, one SELECT tells why:
// no task of that id, or one of another owner, is [a2a.ErrTaskNotFound]. The owner
// and the tenant recorded by Create are kept.
func (s *Store) Update(ctx context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	if req == nil || req.Task == nil {
		return taskstore.TaskVersionMissing, errors.New("a2atasks: update: no task")
	}
	if err := validateTask(req.Task); err != nil {
		return taskstore.TaskVersionMissing, err
	}
	owner, err := s.auth(ctx)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("taskstore auth failed: %w", err)
	}
	body, err := json.Marshal(req.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("a2atasks: update: encode task: %w", err)
	}
	task := req.Task
	var version int64
	watch := s.runs.watchable(ctx, task.Status.State)
	err = s.queryRow(ctx, s.q.update, []any{string(task.ID), task.ContextID, string(task.Status.State),
		statusNanos(task), body, owner, int64(req.PrevVersion), s.nowArg(), s.runs.leaseArg(watch)}, &version)
	if err == nil {
		if watch {
			s.runs.watch(ctx, string(task.ID))
		} else if !active(task.Status.State) {
			s.runs.forget(string(task.ID))
		}
		return taskstore.TaskVersion(version), nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return taskstore.TaskVersionMissing, s.fail(ctx, "update", err)
	}
	var storedOwner string
	switch err := s.queryRow(ctx, s.q.version, []any{string(task.ID)}, &storedOwner, &version); {
	case errors.Is(err, sql.ErrNoRows):
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	case err != nil:
		return taskstore.TaskVersionMissing, s.fail(ctx, "update: read version", err)
	case storedOwner != owner:
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	}
	return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
}

// Get implements [taskstore.Store.Get] with one SELECT. A task of another owner is
// [a2a.ErrTaskNotFound], as in a2a-go's own store (A2A §3.3.2). The task is decoded
// from the stored JSON: encoding it again gives the bytes Create or Update stored.
func (s *Store) Get(ctx context.Context, taskID a2a.TaskID) (*taskstore.StoredTask, error) {
	var (
		body    []byte
		version int64
		owner   string
		dead    int
	)
	switch err := s.queryRow(ctx, s.q.get, []any{string(taskID), s.nowArg()}, &body, &version, &owner, &dead); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, a2a.ErrTaskNotFound
	case err != nil:
		return nil, s.fail(ctx, "get", err)
	}
	caller, err := s.auth(ctx)
	if err != nil {
		return nil, fmt.Errorf("taskstore auth failed: %w", err)
	}
	if caller != owner {
		return nil, a2a.ErrTaskNotFound
	}
	task, err := decodeTask(body)
	if err != nil {
		return nil, err
	}
	if dead == 1 {
		ended, v, err := s.endDead(ctx, string(taskID), task, version)
		if err != nil {
			return nil, err
		}
		if ended == nil {
			// Changed meanwhile (ended elsewhere, or its run renewed): read it again.
			if err := s.queryRow(ctx, s.q.get, []any{string(taskID), s.nowArg()}, &body, &version, &owner, &dead); err != nil {
				return nil, s.fail(ctx, "get", err)
			}
			if ended, err = decodeTask(body); err != nil {
				return nil, err
			}
			v = version
		}
		task, version = ended, v
	}
	return &taskstore.StoredTask{Task: task, Version: taskstore.TaskVersion(version), User: owner}, nil
}

// decodeTask decodes a stored task.
func decodeTask(body []byte) (*a2a.Task, error) {
	var task a2a.Task
	if err := json.Unmarshal(body, &task); err != nil {
		return nil, fmt.Errorf("a2atasks: decode stored task: %w", err)
	}
	return &task, nil
}

// statusNanos returns the task's status timestamp in nanoseconds since the Unix epoch,
// or nil when it has none.
func statusNanos(task *a2a.Task) any {
	if task.Status.Timestamp == nil {
		return nil
	}
	return nanos(*task.Status.Timestamp)
}

// nanos returns t in nanoseconds since the Unix epoch, clamped to what an int64 holds.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, minInt64)):
		return minInt64
	case t.After(time.Unix(0, maxInt64)):
		return maxInt64
	}
	return t.UnixNano()
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

// nowArg returns the clock parameter of a statement: NULL on the database's clock.
func (s *Store) nowArg() any {
	if s.now == nil {
		return nil
	}
	return s.timeArg(s.now())
}

// timeArg returns t as a statement parameter: a time (PostgreSQL) or microseconds
// since the Unix epoch (SQLite), truncated to the microsecond.
func (s *Store) timeArg(t time.Time) any {
	t = t.Truncate(time.Microsecond)
	if s.dialect == sqlstore.SQLite {
		return t.UnixMicro()
	}
	return t.UTC()
}

func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return sqlrun.Exec(ctx, s.db, s.dialect == sqlstore.SQLite, query, args...)
}

func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return sqlrun.QueryRow(ctx, s.db, s.dialect == sqlstore.SQLite, query, args, dest...)
}

func (s *Store) fail(ctx context.Context, op string, err error) error {
	return sqlrun.Fail(ctx, "a2atasks", op, err)
}
