// Package sqlrun holds what the key store (sqlstore) and the task store
// (sqlstore/a2atasks) share: the handle they run statements on, how they tell the SQL
// dialect from it, how they wait out a busy SQLite file, and how they read stored times.
package sqlrun

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// Runner is what a statement runs on: a database handle, or a transaction
// (*sql.Tx).
type Runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DB is the part of a database handle the stores use. *sql.DB has it, and so has
// *sqlx.DB, which embeds one.
type DB interface {
	Runner
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// IsNil reports whether db is nil, or a nil pointer in an interface.
func IsNil(db DB) bool {
	if db == nil {
		return true
	}
	v := reflect.ValueOf(db)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// DriverName returns the database/sql driver name of db: the one *sqlx.DB was opened
// with, or, for a plain *sql.DB, the name the driver registers by default, recognised
// from the driver's package ("sqlite3" for mattn/go-sqlite3, "postgres" for lib/pq,
// "pgx" for jackc/pgx's stdlib). It returns "" when it cannot tell.
func DriverName(db DB) string {
	switch h := db.(type) {
	case interface{ DriverName() string }:
		return h.DriverName()
	case interface{ Driver() driver.Driver }:
		t := reflect.TypeOf(h.Driver())
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.PkgPath() {
		case "github.com/mattn/go-sqlite3":
			return "sqlite3"
		case "github.com/lib/pq":
			return "postgres"
		case "github.com/jackc/pgx/v5/stdlib", "github.com/jackc/pgx/v4/stdlib":
			return "pgx"
		}
	}
	return ""
}

// SQLiteNowMicros is SQLite's clock in microseconds since the Unix epoch, to the
// millisecond. julianday('now') is fixed for the duration of one statement; it counts
// milliseconds, which ROUND recovers exactly from the double.
const SQLiteNowMicros = "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000)"

// maxBusyWait bounds how long RetryBusy retries a statement that found a SQLite
// database locked, when ctx does not end first.
const maxBusyWait = 5 * time.Second

// RetryBusy runs f, and when sqlite is set runs it again while it fails because the
// database is locked (SQLITE_BUSY), after short, growing, jittered pauses, until ctx
// ends or maxBusyWait has passed. A statement that failed with SQLITE_BUSY changed
// nothing, so running it again is safe. SQLite's own busy wait (the DSN's
// _busy_timeout) does not observe ctx: this loop is what lets a deadline end the wait.
func RetryBusy(ctx context.Context, sqlite bool, f func() error) error {
	err := f()
	if !sqlite || !IsBusy(err) {
		return err
	}
	give := time.Now().Add(maxBusyWait)
	for pause := time.Millisecond; IsBusy(err) && time.Now().Before(give); pause = min(2*pause, 32*time.Millisecond) {
		t := time.NewTimer(pause/2 + mrand.N(pause))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		err = f()
	}
	return err
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY, without importing a driver: the
// message of that code is "database is locked" in every Go SQLite driver.
func IsBusy(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database is locked")
}

// Time scans a stored time: a time.Time (PostgreSQL) or microseconds since the Unix
// epoch (SQLite).
type Time struct{ time.Time }

// Scan implements sql.Scanner.
func (v *Time) Scan(src any) error {
	switch x := src.(type) {
	case time.Time:
		v.Time = x.UTC()
	case int64:
		v.Time = time.UnixMicro(x).UTC()
	default:
		return fmt.Errorf("cannot scan %T into a time", src)
	}
	return nil
}

// Fail wraps a database error with the operation (after prefix, the package's name),
// and with ctx's error when ctx ended (drivers report a cancelled statement in their own
// words), so that errors.Is finds context.DeadlineExceeded or context.Canceled.
func Fail(ctx context.Context, prefix, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%s: %s: %w (%w)", prefix, op, err, cerr)
	}
	return fmt.Errorf("%s: %s: %w", prefix, op, err)
}

// MaxIdentifierLength bounds each part of a table name, so that the index names
// derived from it fit PostgreSQL's 63-byte identifiers.
const MaxIdentifierLength = 48

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseTable splits an optionally schema-qualified table name ("t" or "s.t") and checks
// each part: 1 to MaxIdentifierLength ASCII letters, digits and '_', not starting with a
// digit.
func ParseTable(s string) (schema, name string, err error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return "", "", fmt.Errorf("table name %q has more than one '.'", s)
	}
	for _, p := range parts {
		if !identifier.MatchString(p) || len(p) > MaxIdentifierLength {
			return "", "", fmt.Errorf("table name %q: each part must be 1 to %d ASCII letters, digits and '_', not starting with a digit",
				s, MaxIdentifierLength)
		}
	}
	if len(parts) == 2 {
		return parts[0], parts[1], nil
	}
	return "", parts[0], nil
}

// Exec runs a statement that changes rows, through RetryBusy, and returns how many
// it changed. On SQLite, when ctx's deadline is further than noInterruptAfter, the
// statement itself runs under a context that does not end (see quietContext); the
// connection is still taken from the pool under ctx, and RetryBusy still stops at it.
func Exec(ctx context.Context, db Runner, sqlite bool, query string, args ...any) (int64, error) {
	var n int64
	err := RetryBusy(ctx, sqlite, func() error {
		run, sctx, done, err := quietContext(ctx, db, sqlite)
		if err != nil {
			return err
		}
		defer done()
		res, err := run.ExecContext(sctx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// noInterruptAfter is how far a deadline must be for a SQLite statement to run
// without watching it: ten times the busy timeout SQLiteParams sets (100 ms), the
// longest a statement of the stores waits inside SQLite.
const noInterruptAfter = time.Second

// quietContext returns where to run one SQLite statement and the context for it.
// github.com/mattn/go-sqlite3 runs every statement whose context can end on a
// goroutine of its own, and waits for it or for the context, to interrupt SQLite:
// a goroutine and two wake-ups a statement. A store's statement (a claim, a bind)
// ends within the busy timeout, so when ctx's deadline is further than
// noInterruptAfter it runs under context.WithoutCancel(ctx), on a connection taken
// from the pool under ctx (done returns it): the wait for a connection still ends
// with ctx, and RetryBusy stops at ctx between attempts. Otherwise, and off SQLite,
// it returns db and ctx.
func quietContext(ctx context.Context, db Runner, sqlite bool) (run Runner, sctx context.Context, done func(), err error) {
	d, ok := ctx.Deadline()
	if !sqlite || !ok || time.Until(d) <= noInterruptAfter {
		return db, ctx, func() {}, nil
	}
	pool, isPool := db.(interface {
		Conn(context.Context) (*sql.Conn, error)
	})
	if !isPool { // a transaction: its connection is held already
		return db, context.WithoutCancel(ctx), func() {}, nil
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return conn, context.WithoutCancel(ctx), func() { conn.Close() }, nil
}

// QueryRow runs a query through RetryBusy and scans its first row into dest; it
// returns sql.ErrNoRows when there is none.
func QueryRow(ctx context.Context, db Runner, sqlite bool, query string, args []any, dest ...any) error {
	return RetryBusy(ctx, sqlite, func() error {
		return db.QueryRowContext(ctx, query, args...).Scan(dest...)
	})
}

// Query runs a query through RetryBusy and returns its rows, each scanned into the
// fields that dest returns for a new T. An attempt that failed leaves no rows behind.
func Query[T any](ctx context.Context, db Runner, sqlite bool, query string, args []any, dest func(*T) []any) ([]T, error) {
	var out []T
	err := RetryBusy(ctx, sqlite, func() error {
		out = out[:0]
		rs, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var v T
			if err := rs.Scan(dest(&v)...); err != nil {
				return err
			}
			out = append(out, v)
		}
		return rs.Err()
	})
	return out, err
}

// Migrate runs the DDL statements stmts, safely from several processes at once: on
// PostgreSQL in one transaction that first takes the transaction-scoped advisory lock
// lockKey (CREATE … IF NOT EXISTS alone can fail when two sessions race on the
// catalog); on SQLite each on its own, under SQLite's write lock. The error names the
// step that failed ("migrate", "migrate: lock", …).
func Migrate(ctx context.Context, db DB, sqlite bool, lockKey int64, stmts []string) (step string, err error) {
	if sqlite {
		for _, stmt := range stmts {
			if _, err := Exec(ctx, db, true, stmt); err != nil {
				return "migrate", err
			}
		}
		return "", nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "migrate: begin", err
	}
	defer tx.Rollback() // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey); err != nil {
		return "migrate: lock", err
	}
	for _, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return "migrate", err
		}
	}
	if err := tx.Commit(); err != nil {
		return "migrate: commit", err
	}
	return "", nil
}

// Purge runs a retention sweep of batches: batch deletes at most size rows and says
// how many it deleted; left says whether a batch would delete anything. Purge runs
// batches until one deletes fewer than size rows (complete), or maxBatches (when
// positive) have run, and then asks left whether the sweep is complete. ctx is checked
// between batches. It returns the rows deleted and the batches that deleted any. Its
// error is wrapped as [Fail] wraps it, with prefix (the package's name) and the step
// that failed ("purge", "purge: count what is left"); when ctx ends between batches,
// it is ctx's error after "prefix: purge: ".
func Purge(ctx context.Context, prefix string, size, maxBatches int, batch func() (int64, error), left func() (bool, error)) (deleted int64, batches int, complete bool, err error) {
	for ran := 0; ; ran++ {
		if err := ctx.Err(); err != nil {
			return deleted, batches, false, fmt.Errorf("%s: purge: %w", prefix, err)
		}
		if maxBatches > 0 && ran >= maxBatches {
			more, err := left()
			if err != nil {
				return deleted, batches, false, Fail(ctx, prefix, "purge: count what is left", err)
			}
			return deleted, batches, !more, nil
		}
		n, err := batch()
		if err != nil {
			return deleted, batches, false, Fail(ctx, prefix, "purge", err)
		}
		if n > 0 {
			batches++
			deleted += n
		}
		if n < int64(size) {
			return deleted, batches, true, nil
		}
	}
}
