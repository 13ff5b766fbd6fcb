package testdb

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// OpenTaskStores opens the database spec names ([OpenDB]) with keys and tasks side
// by side (sqlstore beside sqlstore/a2atasks, in their default tables), migrated.
// keyTTL and runLease are the stores' options (zero: their defaults). With sole, it
// calls a2atasks' Restarted, as the only server on the database does before it
// serves, and logs what that ended.
func OpenTaskStores(ctx context.Context, spec string, keyTTL, runLease time.Duration, sole bool, log *slog.Logger) (*sqlx.DB, *sqlstore.Store, *a2atasks.Store, error) {
	db, err := OpenDB(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err := sqlstore.New(db, sqlstore.Options{TaskTable: a2atasks.DefaultTable, TTL: keyTTL})
	if err != nil {
		return nil, nil, nil, err
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{Keys: keys, RunLease: runLease})
	if err != nil {
		return nil, nil, nil, err
	}
	if err := tasks.Migrate(ctx); err != nil {
		return nil, nil, nil, err
	}
	if sole {
		ended, leases, err := tasks.Restarted(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		log.Warn("restarted as the sole instance", "tasks_ended", ended, "leases_ended", leases)
	}
	return db, keys, tasks, nil
}

// TaskServer is what the test servers whose tasks and keys share one database
// (crashserver, durableserver) read from their command line: where to listen, the
// database, the run file, the server's name, the leases and -sole.
type TaskServer struct {
	Addr, DB, Runs, Name        string
	Lease, RunLease, ReplayWait time.Duration
	Sole                        bool
}

// Flags defines the flags -addr, -db, -runs, -name, -lease, -run-lease, -replay-wait
// and -sole on the command line (the durations with the defaults given); the server
// calls flag.Parse.
func (s *TaskServer) Flags(lease, runLease, replayWait time.Duration) {
	flag.StringVar(&s.Addr, "addr", "127.0.0.1:0", "`host:port` to listen on")
	flag.StringVar(&s.DB, "db", "", "the database: a SQLite file `path` or a postgres:// DSN")
	flag.StringVar(&s.Runs, "runs", "", "`file` the agent appends a line to as each run starts")
	flag.StringVar(&s.Name, "name", "server", "the `name` of this process in the run file")
	flag.DurationVar(&s.Lease, "lease", lease, "the middleware's lease")
	flag.DurationVar(&s.RunLease, "run-lease", runLease, "a2atasks' run lease")
	flag.DurationVar(&s.ReplayWait, "replay-wait", replayWait, "the middleware's ReplayWait")
	flag.BoolVar(&s.Sole, "sole", false, "the only server on the database: a2atasks' Restarted before serving, and the middleware's SoleInstance")
}

// Open checks that -db and -runs are set and opens the stores of -db
// ([OpenTaskStores], keys with keyTTL as their time to live).
func (s *TaskServer) Open(ctx context.Context, keyTTL time.Duration, log *slog.Logger) (*sqlx.DB, *sqlstore.Store, *a2atasks.Store, error) {
	if s.DB == "" || s.Runs == "" {
		return nil, nil, nil, errors.New("-db and -runs are required")
	}
	return OpenTaskStores(ctx, s.DB, keyTTL, s.RunLease, s.Sole, log)
}

// Config is the kit around agent over keys and tasks, with TaskReader and the
// middleware's Lease, ReplayWait and SoleInstance from the flags, for
// [testkit.ServeCommand] at s.Addr.
func (s *TaskServer) Config(agent *testkit.Agent, keys *sqlstore.Store, tasks *a2atasks.Store, log *slog.Logger) testkit.Config {
	return testkit.Config{
		Agent:      agent,
		Index:      keys,
		TaskStore:  tasks,
		TaskReader: true,
		Middleware: middleware.Options{Lease: s.Lease, ReplayWait: s.ReplayWait, SoleInstance: s.Sole, Logger: log},
		Logger:     log,
	}
}

// PostgresSchema returns the DSN of IDEMPOTENCY_POSTGRES_DSN ([PostgresDSN]: the test
// is skipped when it is unset) with a fresh schema, named with prefix, as its
// search_path; the schema is dropped when the test ends.
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := testkit.PostgresDSN(t)
	db, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema := testkit.RandomName(prefix)
	if _, err := db.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", testkit.PostgresDSNVar, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec(`DROP SCHEMA "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
