package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// DB is what a [Store] needs of a database handle. Both *sql.DB and *sqlx.DB (which
// embeds a *sql.DB) have it, so either can be passed to [New]: a program that already
// opens its database with database/sql needs no sqlx. An interface rather than two
// constructors keeps one way to build a Store; the dialect is still told from the
// handle (see [DialectOf]).
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// DialectOf returns the dialect [New] detects for db: from the driver name of a
// *sqlx.DB ("sqlite3" is [SQLite]; "postgres", "pgx" and "pgx/v5" are [PostgreSQL]),
// or, for a plain *sql.DB, from the driver's package (github.com/mattn/go-sqlite3,
// github.com/lib/pq, github.com/jackc/pgx/v5/stdlib). It returns false when it cannot
// tell; set [Options.Dialect] then.
func DialectOf(db DB) (Dialect, bool) {
	if sqlrun.IsNil(db) {
		return DetectDialect, false
	}
	return dialectOf(sqlrun.DriverName(db))
}

// resolveDialect returns d, or the dialect of db when d is [DetectDialect].
func resolveDialect(db DB, d Dialect) (Dialect, error) {
	if sqlrun.IsNil(db) {
		return DetectDialect, errors.New("nil database handle")
	}
	switch d {
	case DetectDialect:
		if d, ok := DialectOf(db); ok {
			return d, nil
		}
		return DetectDialect, fmt.Errorf("cannot tell the SQL dialect of driver %q: set Options.Dialect", sqlrun.DriverName(db))
	case SQLite, PostgreSQL:
		return d, nil
	}
	return DetectDialect, fmt.Errorf("unknown %v", d)
}
