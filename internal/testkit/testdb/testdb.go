// Package testdb opens the kit's bundled indexes (memstore, and sqlstore on SQLite or
// PostgreSQL) from a short spec, for the benchmarks, the load harness, the crash
// test's server and the fault tests. A spec is "mem", a postgres:// (or
// postgresql://) DSN, or a SQLite file path, optionally prefixed with "sqlite:".
// SQLite needs cgo (the mattn/go-sqlite3 driver); PostgreSQL is reached through
// lib/pq. It is apart from package testkit so that a module whose tests use the kit
// (grpcbinding) need not list the SQL drivers.
package testdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/sqlstore"
)

// Index is an opened index and what it runs on.
type Index struct {
	idempotency.KeyIndex
	// DB is the database of a sqlstore index, nil for memstore.
	DB *sqlx.DB
	// Table is the key table of a sqlstore index.
	Table string
}

// Close closes the index's database.
func (ix *Index) Close() error {
	if ix.DB == nil {
		return nil
	}
	return ix.DB.Close()
}

// Drop drops the key table of a sqlstore index.
func (ix *Index) Drop(ctx context.Context) error {
	if ix.DB == nil {
		return nil
	}
	_, err := ix.DB.ExecContext(ctx, `DROP TABLE IF EXISTS "`+ix.Table+`"`)
	return err
}

// openSQLite is set by the cgo build.
var openSQLite func(path string) (*sqlx.DB, error)

// SQLiteAvailable reports whether this build can open SQLite files (it needs cgo).
func SQLiteAvailable() bool { return openSQLite != nil }

// Open opens the index spec names, with its key table (sqlstore only; default
// sqlstore.DefaultTable) created when missing. maxConns bounds the database pool of a
// sqlstore index (0: the driver's default).
func Open(ctx context.Context, spec, table string, maxConns int) (*Index, error) {
	if spec == "mem" || spec == "memory" {
		return &Index{KeyIndex: memstore.New(memstore.Options{})}, nil
	}
	db, err := OpenDB(spec)
	if err != nil {
		return nil, err
	}
	return finish(ctx, db, db.DriverName(), table, maxConns)
}

// OpenDB opens the database of a sqlstore spec: PostgreSQL for a postgres:// (or
// postgresql://) DSN, else a SQLite file (the path, optionally prefixed with
// "sqlite:"). It does not connect.
func OpenDB(spec string) (*sqlx.DB, error) {
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		return sqlx.Open("postgres", spec)
	}
	if openSQLite == nil {
		return nil, errors.New("testdb: SQLite needs a build with cgo (CGO_ENABLED=1)")
	}
	return openSQLite(strings.TrimPrefix(spec, "sqlite:"))
}

func finish(ctx context.Context, db *sqlx.DB, kind, table string, maxConns int) (*Index, error) {
	if maxConns > 0 {
		db.SetMaxOpenConns(maxConns)
		db.SetMaxIdleConns(maxConns)
	}
	if table == "" {
		table = sqlstore.DefaultTable
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("testdb: %s unreachable: %w", kind, err)
	}
	st, err := sqlstore.New(db, sqlstore.Options{Table: table})
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := st.Migrate(pctx); err != nil {
		db.Close()
		return nil, err
	}
	return &Index{KeyIndex: st, DB: db, Table: table}, nil
}

// Kinds lists the index kinds ForTest opens.
var Kinds = []string{"mem", "sqlite", "postgres"}

// ForTest opens an index of kind ("mem", "sqlite" or "postgres") for a test or
// benchmark, closed (and its table dropped) when tb ends: SQLite in a file under
// tb.TempDir, PostgreSQL in a table of a unique name on the database testkit.PostgresDSNVar
// names. It skips tb when the kind is not available (no cgo for SQLite, the variable
// unset for PostgreSQL) and fails it when PostgreSQL is configured but unreachable.
func ForTest(tb testing.TB, kind string, maxConns int) *Index {
	tb.Helper()
	var spec string
	switch kind {
	case "mem":
		spec = "mem"
	case "sqlite":
		if !SQLiteAvailable() {
			tb.Skip("SQLite needs cgo (CGO_ENABLED=1)")
		}
		spec = SQLiteDSN(tb.TempDir() + "/keys.db")
	case "postgres":
		spec = testkit.PostgresDSN(tb)
	default:
		tb.Fatalf("unknown index kind %q", kind)
	}
	ix, err := Open(context.Background(), spec, testkit.RandomName("kit_test_"), maxConns)
	if err != nil {
		tb.Fatalf("open %s index: %v", kind, err)
	}
	tb.Cleanup(func() {
		if kind == "postgres" {
			if err := ix.Drop(context.Background()); err != nil {
				tb.Errorf("drop table %s: %v", ix.Table, err)
			}
		}
		ix.Close()
	})
	return ix
}

// sqliteParams are the connection parameters sqlstore's documentation recommends for
// SQLite.
const sqliteParams = "_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"

// SQLiteDSN returns the DSN sqlstore's documentation recommends for the file at path.
func SQLiteDSN(path string) string {
	return "sqlite:file:" + path + "?" + sqliteParams
}

// Postgres returns the DSN of the test database ([testkit.PostgresDSN]) once it has
// answered a ping: it skips tb when the variable is unset, and fails it when the
// database cannot be reached.
func Postgres(tb testing.TB) string {
	tb.Helper()
	dsn := testkit.PostgresDSN(tb)
	db, err := OpenDB(dsn)
	if err != nil {
		tb.Fatalf("%s: %v", testkit.PostgresDSNVar, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("%s is set but the database cannot be reached: %v", testkit.PostgresDSNVar, err)
	}
	return dsn
}

// OpenPool opens a pool with driver on dsn (the test database of
// [testkit.PostgresDSN]), closed when tb ends, once it has
// answered a ping: it fails tb when the pool cannot be opened or the database
// cannot be reached.
func OpenPool(tb testing.TB, driver, dsn string) *sqlx.DB {
	tb.Helper()
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		tb.Fatalf("open %s: %v", driver, err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		tb.Fatalf("%s is set but the database is unreachable: %v", testkit.PostgresDSNVar, err)
	}
	return db
}

// TempTable returns a table name no other run uses (prefix, "_" and random hex), for
// a server under test to create in the PostgreSQL database at dsn, and drops that
// table when tb ends.
func TempTable(tb testing.TB, dsn, prefix string) string {
	tb.Helper()
	table := testkit.RandomName(prefix + "_")
	tb.Cleanup(func() {
		db, err := OpenDB(dsn)
		if err != nil {
			tb.Errorf("drop %s: %v", table, err)
			return
		}
		defer db.Close()
		if _, err := db.Exec(`DROP TABLE IF EXISTS "` + table + `"`); err != nil {
			tb.Errorf("drop %s: %v", table, err)
		}
	})
	return table
}
