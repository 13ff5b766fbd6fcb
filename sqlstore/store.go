package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// DefaultTable is the table a [Store] uses unless [Options.Table] names another.
const DefaultTable = "a2a_idempotency_keys"

// Options configure a [Store]. The zero value works: every field has a default.
type Options struct {
	// Table is the key table, optionally schema-qualified ("keys" or "app.keys"); default
	// [DefaultTable]. Each part is 1 to 48 ASCII letters, digits and '_', not starting
	// with a digit. Names are quoted in SQL, so they are used exactly as given, case
	// included. The schema must exist; [Store.Migrate] creates only the table.
	Table string

	// Dialect is the SQL dialect; by default it is detected from the driver name of a
	// *sqlx.DB, or from the driver's package for a plain *sql.DB. Set it when the
	// driver is registered under another name, or when a *sql.DB's driver is another.
	Dialect Dialect

	// TTL is a key's time to live, counted from its first claim; default
	// [idempotency.DefaultKeyMaxAge] (24 hours). A key past it counts as absent, and the
	// next claim replaces it. It must be at least a microsecond.
	TTL time.Duration

	// TaskTable, when set, names the table of the tasks the keys are bound to, in the
	// same database, whose "id" column holds task ids (the table of
	// github.com/a2akit/idempotency/sqlstore/a2atasks). [Store.PurgeExpired] then never
	// deletes a key bound to a task id still in that table, whatever the key's age.
	// The table must exist when PurgeExpired runs (a2atasks' Migrate creates both).
	// Nothing else reads it, and the store never writes to it.
	TaskTable string

	// Now, when set, is the clock of every time the store writes or compares, passed to
	// the database as statement parameters. When nil, the database's clock is used
	// inside the statements. See the package documentation, "Clocks".
	Now func() time.Time
}

// Store is an [idempotency.KeyIndex] and [idempotency.Sweeper] on a SQL table. Create it
// with [New]; it is safe for concurrent use, and any number of Stores, in one process
// or many, may share one table.
//
// Beyond the KeyIndex contract, scopes, message ids, task ids and replies are within
// the bounds of [idempotency.CheckLengths], and on PostgreSQL scopes, message ids and
// task ids must be UTF-8 without NUL bytes (what a TEXT column holds); other input is
// refused with an error wrapping [idempotency.ErrInvalidArgument] before any statement
// runs. Replies are stored as bytes, verbatim. A row therefore holds at most about
// 1 MiB and 10.5 KiB (a reply of [idempotency.MaxReplyLength] and the longest scope,
// key and ids).
type Store struct {
	db        DB
	dialect   Dialect
	table     tableName
	taskTable tableName
	ttl       time.Duration
	now       func() time.Time
	q         queries
}

var (
	_ idempotency.KeyIndex = (*Store)(nil)
	_ idempotency.Sweeper  = (*Store)(nil)
)

// New returns a Store on db (a *sql.DB or a *sqlx.DB), which must stay open while the
// Store is used. It checks opts and builds the store's SQL, but does not touch the
// database: call [Store.Migrate] to create the table. A dialect that cannot be told
// from db with no explicit [Options.Dialect], a malformed table name, or a TTL below a
// microsecond is an error.
func New(db DB, opts Options) (*Store, error) {
	d, err := resolveDialect(db, opts.Dialect)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	name := opts.Table
	if name == "" {
		name = DefaultTable
	}
	table, err := parseTableName(name)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %w", err)
	}
	var taskTable tableName
	if opts.TaskTable != "" {
		if taskTable, err = parseTableName(opts.TaskTable); err != nil {
			return nil, fmt.Errorf("sqlstore: task %w", err)
		}
	}
	ttl := opts.TTL
	switch {
	case ttl == 0:
		ttl = idempotency.DefaultKeyMaxAge
	case ttl < time.Microsecond:
		return nil, fmt.Errorf("sqlstore: TTL %v is below a microsecond", ttl)
	}
	return &Store{
		db:        db,
		dialect:   d,
		table:     table,
		taskTable: taskTable,
		ttl:       ttl,
		now:       opts.Now,
		q:         buildQueries(d, table, taskTable, ttl, opts.Now != nil),
	}, nil
}

// Dialect returns the SQL dialect the store speaks.
func (s *Store) Dialect() Dialect { return s.dialect }

// Table returns the name of the key table, as configured.
func (s *Store) Table() string { return s.table.String() }

// TaskTable returns [Options.TaskTable], as configured.
func (s *Store) TaskTable() string {
	if s.taskTable.name == "" {
		return ""
	}
	return s.taskTable.String()
}

// maxClaimAttempts bounds how often Claim retries when the key changed between its
// statements (released, expired or abandoned just then).
const maxClaimAttempts = 8

// Claim implements [idempotency.KeyIndex.Claim].
//
// The claim is one INSERT … ON CONFLICT DO UPDATE … WHERE statement: it inserts a
// pending claim, replaces a key past its time to live, or takes over a pending claim
// of the same message whose lease has ended, and affects no row otherwise. The
// database decides, under its row lock, so concurrent claims from any number of
// processes have exactly one winner. When it affected no row, one SELECT reads the
// holder. When that SELECT finds no live holder, or finds an abandoned claim of the
// same message, the key changed between the two statements (released, expired, or its
// lease ended just then), and Claim starts over with a new token, a few times at most;
// it never reports [idempotency.Claimed] for a claim its own statement did not make.
// Lease is rounded up to a whole microsecond.
func (s *Store) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if err := s.checkArgs(scope, key, messageID, idempotency.Binding{}); err != nil {
		return idempotency.Claim{}, fmt.Errorf("sqlstore: claim: %w", err)
	}
	if messageID == "" {
		return idempotency.Claim{}, fmt.Errorf("sqlstore: claim: %w: empty message id", idempotency.ErrInvalidArgument)
	}
	if lease <= 0 {
		return idempotency.Claim{}, fmt.Errorf("sqlstore: claim: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	leaseMicros := (lease + time.Microsecond - 1).Microseconds()
	for range maxClaimAttempts {
		token := idempotency.RandomToken()
		switch n, err := s.exec(ctx, s.q.claim, s.args(scope, key, messageID, int64(token), leaseMicros)...); {
		case err != nil:
			return idempotency.Claim{}, s.fail(ctx, "claim", err)
		case n == 1:
			return idempotency.Claim{Status: idempotency.Claimed, Token: token}, nil
		case n != 0:
			return idempotency.Claim{}, fmt.Errorf("sqlstore: claim: the claim statement affected %d rows", n)
		}
		rec, leaseEnded, found, err := s.read(ctx, scope, key)
		switch {
		case err != nil:
			return idempotency.Claim{}, s.fail(ctx, "claim: read holder", err)
		case !found:
			continue // released or expired since the claim statement
		case rec.MessageID != messageID:
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
		case rec.Pending() && leaseEnded:
			continue // the lease ended since the claim statement
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: rec}, nil
	}
	return idempotency.Claim{}, fmt.Errorf("sqlstore: claim: the key changed under %d claim attempts in a row", maxClaimAttempts)
}

// Bind implements [idempotency.KeyIndex.Bind].
//
// The bind is one UPDATE whose WHERE clause checks the token, that the key is live,
// and that the binding is allowed (the key is pending, or bound to b.TaskID alone and
// b adds a Reply). When it affects no row, one SELECT tells why: no live key, or
// another token, is [idempotency.ErrNotOwner], whatever is bound; the same token with
// b, or more than b, already bound is success (binding is idempotent: a key bound to a
// task and a reply may be bound again to the task alone, or to the reply alone); the
// same token with something else bound is [idempotency.ErrAlreadyBound]. An empty
// Reply counts as none.
func (s *Store) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	return s.bind(ctx, s.db, scope, key, token, b)
}

// bind is Bind on run: the store's database, or a transaction.
func (s *Store) bind(ctx context.Context, run sqlrun.Runner, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := s.checkArgs(scope, key, "", b); err != nil {
		return fmt.Errorf("sqlstore: bind: %w", err)
	}
	if token == 0 {
		return fmt.Errorf("sqlstore: bind: %w: zero token", idempotency.ErrInvalidArgument)
	}
	if b.TaskID == "" && len(b.Reply) == 0 {
		return fmt.Errorf("sqlstore: bind: %w: the binding has neither a task id nor a reply", idempotency.ErrInvalidArgument)
	}
	taskID, reply := nullable(b)
	switch n, err := sqlrun.Exec(ctx, run, s.dialect == SQLite, s.q.bind, s.args(scope, key, int64(token), taskID, reply)...); {
	case err != nil:
		return s.fail(ctx, "bind", err)
	case n == 1:
		return nil
	case n != 0:
		return fmt.Errorf("sqlstore: bind: the bind statement affected %d rows", n)
	}
	o, found, err := s.owner(ctx, run, scope, key)
	switch {
	case err != nil:
		return s.fail(ctx, "bind: read owner", err)
	case !found || o.token != token:
		return fmt.Errorf("sqlstore: bind: %w", idempotency.ErrNotOwner)
	case o.taskID == "" && o.reply == nil:
		// Still pending under this token, yet the UPDATE did not match: only a clock
		// that went backwards gets here.
		return errors.New("sqlstore: bind: the key changed while binding")
	case (b.TaskID == "" || b.TaskID == o.taskID) && (len(b.Reply) == 0 || bytes.Equal(b.Reply, o.reply)):
		return nil // b is what is bound, or a part of it
	}
	return fmt.Errorf("sqlstore: bind: %w", idempotency.ErrAlreadyBound)
}

// Release implements [idempotency.KeyIndex.Release].
//
// The release is one DELETE of the row that is pending under token. When it deletes
// nothing, one SELECT tells why: no live key (never claimed, already released, past
// its time to live), or a key bound under token, returns nil; a live key under another
// token, pending or bound, is [idempotency.ErrNotOwner].
func (s *Store) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := s.checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("sqlstore: release: %w", err)
	}
	if token == 0 {
		return fmt.Errorf("sqlstore: release: %w: zero token", idempotency.ErrInvalidArgument)
	}
	switch n, err := s.exec(ctx, s.q.release, scope, key, int64(token)); {
	case err != nil:
		return s.fail(ctx, "release", err)
	case n == 1:
		return nil
	case n != 0:
		return fmt.Errorf("sqlstore: release: the release statement affected %d rows", n)
	}
	o, found, err := s.owner(ctx, s.db, scope, key)
	switch {
	case err != nil:
		return s.fail(ctx, "release: read owner", err)
	case !found:
		return nil
	case o.token != token:
		return fmt.Errorf("sqlstore: release: %w", idempotency.ErrNotOwner)
	case o.taskID == "" && o.reply == nil:
		return errors.New("sqlstore: release: the key changed while releasing")
	}
	return nil // bound: never released
}

// Extend implements [idempotency.KeyIndex.Extend] with one UPDATE, guarded by the
// token, that the key is live and pending, and that its lease still runs, all by the
// database's clock (or Options.Now). When it affects no row, the answer is
// [idempotency.ErrNotOwner] whatever the reason, so no second statement is needed.
// Lease is rounded up to a whole microsecond.
func (s *Store) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if err := s.checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("sqlstore: extend: %w", err)
	}
	if token == 0 {
		return fmt.Errorf("sqlstore: extend: %w: zero token", idempotency.ErrInvalidArgument)
	}
	if lease <= 0 {
		return fmt.Errorf("sqlstore: extend: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	leaseMicros := (lease + time.Microsecond - 1).Microseconds()
	switch n, err := s.exec(ctx, s.q.extend, s.args(scope, key, int64(token), leaseMicros)...); {
	case err != nil:
		return s.fail(ctx, "extend", err)
	case n == 1:
		return nil
	case n != 0:
		return fmt.Errorf("sqlstore: extend: the extend statement affected %d rows", n)
	}
	return fmt.Errorf("sqlstore: extend: %w", idempotency.ErrNotOwner)
}

// Lookup implements [idempotency.KeyIndex.Lookup] with one SELECT.
func (s *Store) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := s.checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("sqlstore: lookup: %w", err)
	}
	rec, _, found, err := s.read(ctx, scope, key)
	if err != nil {
		return idempotency.Record{}, false, s.fail(ctx, "lookup", err)
	}
	return rec, found, nil
}

// read returns the live row of (scope, key), and whether its lease has ended.
func (s *Store) read(ctx context.Context, scope, key string) (rec idempotency.Record, leaseEnded, found bool, err error) {
	var (
		taskID              sql.NullString
		claimedAt, leaseEnd timeValue
	)
	err = s.queryRow(ctx, s.q.read, s.args(scope, key),
		&rec.MessageID, &taskID, &rec.Reply, &claimedAt, &leaseEnd, &leaseEnded)
	if errors.Is(err, sql.ErrNoRows) {
		return idempotency.Record{}, false, false, nil
	}
	if err != nil {
		return idempotency.Record{}, false, false, err
	}
	rec.TaskID = taskID.String
	if len(rec.Reply) == 0 {
		rec.Reply = nil
	}
	rec.ClaimedAt, rec.LeaseExpiresAt = claimedAt.Time, leaseEnd.Time
	return rec, leaseEnded, true, nil
}

type ownerRow struct {
	token  idempotency.Token
	taskID string
	reply  []byte
}

// owner returns the token and binding of the live row of (scope, key), read on run.
func (s *Store) owner(ctx context.Context, run sqlrun.Runner, scope, key string) (o ownerRow, found bool, err error) {
	var (
		token  int64
		taskID sql.NullString
	)
	err = sqlrun.QueryRow(ctx, run, s.dialect == SQLite, s.q.owner, s.args(scope, key), &token, &taskID, &o.reply)
	if errors.Is(err, sql.ErrNoRows) {
		return ownerRow{}, false, nil
	}
	if err != nil {
		return ownerRow{}, false, err
	}
	o.token, o.taskID = idempotency.Token(uint64(token)), taskID.String
	if len(o.reply) == 0 {
		o.reply = nil
	}
	return o, true, nil
}

// exec runs a statement that changes rows, and returns how many it changed.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	return sqlrun.Exec(ctx, s.db, s.dialect == SQLite, query, args...)
}

// queryRow runs a query and scans its first row into dest; it returns sql.ErrNoRows
// when there is none.
func (s *Store) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return sqlrun.QueryRow(ctx, s.db, s.dialect == SQLite, query, args, dest...)
}

// args returns the statement arguments a, followed by the current time when the store
// runs on the Go clock.
func (s *Store) args(a ...any) []any {
	if s.now == nil {
		return a
	}
	now := s.now().Truncate(time.Microsecond)
	if s.dialect == SQLite {
		return append(a, now.UnixMicro())
	}
	return append(a, now.UTC())
}

// fail wraps a database error with the operation; see [sqlrun.Fail].
func (s *Store) fail(ctx context.Context, op string, err error) error {
	return sqlrun.Fail(ctx, "sqlstore", op, err)
}

// MaxScopeLength bounds the length of a scope, in bytes, so that the primary key of
// (scope, key) fits a PostgreSQL index entry. It is [idempotency.MaxScopeLength].
const MaxScopeLength = idempotency.MaxScopeLength

// checkArgs checks the key, and the lengths of the scope, the message id and the
// binding (idempotency.CheckLengths; empty values for those that do not apply). On
// PostgreSQL, TEXT columns hold only valid UTF-8 without NUL bytes, so other text is
// refused before it reaches the database.
func (s *Store) checkArgs(scope, key, messageID string, b idempotency.Binding) error {
	if err := idempotency.ValidateKey(key); err != nil {
		return fmt.Errorf("%w: %w", idempotency.ErrInvalidArgument, err)
	}
	if err := idempotency.CheckLengths(scope, messageID, b); err != nil {
		return err
	}
	if s.dialect == PostgreSQL {
		for _, f := range [...]struct{ what, text string }{{"scope", scope}, {"message id", messageID}, {"task id", b.TaskID}} {
			if !storableText(f.text) {
				return fmt.Errorf("%w: %s is not UTF-8 text without NUL bytes", idempotency.ErrInvalidArgument, f.what)
			}
		}
	}
	return nil
}

func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.Contains(s, "\x00")
}

// nullable returns b's fields as statement arguments, NULL when unset.
func nullable(b idempotency.Binding) (taskID, reply any) {
	if b.TaskID != "" {
		taskID = b.TaskID
	}
	if len(b.Reply) > 0 {
		reply = b.Reply
	}
	return taskID, reply
}

// timeValue scans a stored time: a time.Time (PostgreSQL) or microseconds since the
// Unix epoch (SQLite).
type timeValue = sqlrun.Time
