package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// ErrNotSQL is wrapped by the error of [Open] for a store URL whose scheme names no
// SQL database (redis://, say): a program that takes several kinds of store tells
// them apart by [Scheme] before it calls Open.
var ErrNotSQL = errors.New("sqlstore: not a SQL store URL")

// SQLiteParams are the connection parameters of github.com/mattn/go-sqlite3 that
// the package documentation asks for (see "SQLite"); [Open] adds each one a SQLite
// URL does not set.
const SQLiteParams = "_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"

// Scheme returns the lower-cased scheme of a store URL, or "" for a plain file path
// (which [Open] takes as a SQLite file). A Windows drive letter ("C:\keys.db") is a
// path, not a scheme.
func Scheme(storeURL string) string {
	i := strings.IndexByte(storeURL, ':')
	if i < 2 {
		return ""
	}
	for j, c := range storeURL[:i] {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')
		if !ok {
			return ""
		}
	}
	return strings.ToLower(storeURL[:i])
}

// Open opens the SQL database a store URL names and checks that it answers (a ping
// within ctx), for programs that take their store as one string, from a flag or an
// environment variable:
//
//	postgres://user@db:5432/app?sslmode=disable   PostgreSQL (postgresql:// too)
//	sqlite:keys.db, sqlite:///var/lib/keys.db     a SQLite file, created if missing
//	keys.db, /var/lib/keys.db                     a SQLite file: a path with no scheme
//
// The package still imports no driver: the program imports the one it wants, and
// Open uses the one registered ("postgres" of github.com/lib/pq, else "pgx" of
// github.com/jackc/pgx/v5/stdlib; "sqlite3" of github.com/mattn/go-sqlite3, which
// needs cgo), or says which to import. A SQLite URL gets each of [SQLiteParams] it
// does not set in its query. Any other scheme returns an error wrapping [ErrNotSQL].
// Errors name the store as [Describe] does, never with a password; the driver's
// error is wrapped, for the log.
//
// The handle keeps up to [IdleConns] idle connections, where database/sql keeps 2
// (see "Connections" in the package documentation); call SetMaxIdleConns to change
// it. The handle is the caller's to close. Pass it to [New], and to
// sqlstore/a2atasks.New for tasks in the same database.
func Open(ctx context.Context, storeURL string) (*sqlx.DB, error) {
	driver, dsn, err := driverDSN(storeURL, sql.Drivers())
	if err != nil {
		return nil, err
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open %s: %w", Describe(storeURL), err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect to %s: %w", Describe(storeURL), err)
	}
	db.SetMaxIdleConns(IdleConns)
	return db, nil
}

// IdleConns is how many idle connections a handle of [Open] keeps: enough for the
// store calls of the sends a busy server has in flight at once, each send's claim,
// bind, and lease extensions.
const IdleConns = 32

// driverDSN returns the driver name and DSN for storeURL, given the registered
// drivers.
func driverDSN(storeURL string, drivers []string) (driver, dsn string, err error) {
	if storeURL == "" {
		return "", "", errors.New("sqlstore: empty store URL: name a SQLite file or a postgres:// DSN")
	}
	pick := func(kind, imports string, names ...string) (string, error) {
		for _, n := range names {
			if slices.Contains(drivers, n) {
				return n, nil
			}
		}
		return "", fmt.Errorf("sqlstore: no %s driver is registered: the program must import %s", kind, imports)
	}
	switch Scheme(storeURL) {
	case "postgres", "postgresql":
		driver, err = pick("PostgreSQL", `_ "github.com/lib/pq" (or _ "github.com/jackc/pgx/v5/stdlib")`, "postgres", "pgx", "pgx/v5")
		return driver, storeURL, err
	case "", "sqlite", "file":
		driver, err = pick("SQLite", `_ "github.com/mattn/go-sqlite3" (built with cgo)`, "sqlite3")
		return driver, sqliteDSN(storeURL), err
	}
	return "", "", fmt.Errorf("%w: %s (want postgres://…, sqlite:FILE or a file path)", ErrNotSQL, Describe(storeURL))
}

// sqliteDSN returns the go-sqlite3 DSN of a SQLite store URL: file:PATH?QUERY with
// each of SQLiteParams the URL does not set.
func sqliteDSN(storeURL string) string {
	path := storeURL
	switch Scheme(storeURL) {
	case "sqlite":
		path = storeURL[len("sqlite:"):]
		path = strings.TrimPrefix(path, "//")
	case "file":
		path = storeURL[len("file:"):]
	}
	path, query, _ := strings.Cut(path, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		q = url.Values{} // go-sqlite3 reports a bad query itself
	}
	for _, kv := range strings.Split(SQLiteParams, "&") {
		if k, _, _ := strings.Cut(kv, "="); !q.Has(k) {
			query += "&" + kv
		}
	}
	return "file:" + path + "?" + strings.TrimPrefix(query, "&")
}

// Describe names a store URL for a log line or an error: "SQLite file keys.db",
// "PostgreSQL postgres://app:xxxxx@db/app" (the password hidden, in the user
// information or the query), or the scheme alone
// for other URLs, whose credentials it cannot know how to hide.
func Describe(storeURL string) string {
	switch s := Scheme(storeURL); s {
	case "", "sqlite", "file":
		path, _, _ := strings.Cut(sqliteDSN(storeURL)[len("file:"):], "?")
		return "SQLite file " + path
	case "postgres", "postgresql":
		u, err := url.Parse(storeURL)
		if err != nil {
			return "PostgreSQL (a DSN that does not parse as a URL)"
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return "PostgreSQL " + u.Redacted()
	default:
		return "a " + s + ":// store"
	}
}
