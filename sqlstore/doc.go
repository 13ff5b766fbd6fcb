// Package sqlstore is an [idempotency.KeyIndex] on SQLite or PostgreSQL, through
// github.com/jmoiron/sqlx. Several processes (replicas of one server) may share one
// database: claims are decided by single SQL statements, never in Go, so concurrent
// claims of one key resolve to exactly one winner across every process.
//
// The package imports no database driver. Open the database with the driver of your
// choice, as a *sql.DB or a *sqlx.DB (either satisfies [DB]), create the [Store] with
// [New], and create its table once with [Store.Migrate]:
//
//	db, err := sqlx.Open("pgx", "postgres://app@db/app")        // or "postgres" (lib/pq)
//	db, err := sqlx.Open("sqlite3", "file:keys.db?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16")
//	db.SetMaxIdleConns(sqlstore.IdleConns) // see "Connections"
//	store, err := sqlstore.New(db, sqlstore.Options{})
//	err = store.Migrate(ctx)
//
// The dialect is taken from the handle (see [DialectOf]) or set with [Options.Dialect].
//
// The tasks of a2a-go servers can live in the same database: package
// github.com/a2akit/idempotency/sqlstore/a2atasks is an a2a-go task store beside this
// key table, with one retention sweep over both (set [Options.TaskTable]). It is a
// package of its own, so that programs that only want keys do not import a2a-go.
//
// # Schema
//
// [Store.Migrate] creates one table (default [DefaultTable]) and one index:
//
//	scope            TEXT    NOT NULL  -- the key's scope (the A2A tenant by default)
//	key              TEXT    NOT NULL  -- the idempotency key; PRIMARY KEY (scope, key)
//	message_id       TEXT    NOT NULL  -- the message that claimed the key
//	task_id          TEXT    NULL      -- the bound task id, NULL until bound
//	reply            BYTEA / BLOB NULL -- the bound Message reply (A2A JSON), verbatim
//	token            BIGINT  NOT NULL  -- the fencing token, a uint64 stored bit for bit
//	claimed_at       TIMESTAMPTZ / INTEGER NOT NULL -- first claim
//	lease_expires_at TIMESTAMPTZ / INTEGER NOT NULL -- when a pending claim may be taken over
//	INDEX <table>_claimed_at_idx ON (claimed_at)  -- for the retention sweep
//
// On SQLite the two times are integers counting microseconds since the Unix epoch. The
// table has no foreign key to any task table, and nothing deletes a key when its task
// is deleted: a retry of a send whose task is gone must find the key and learn that the
// task is gone rather than run the agent again. Keys leave the table only by
// [Store.Release] of a pending claim, by a claim replacing a key past its time to live,
// or by [Store.PurgeExpired].
//
// # Statements
//
// A keyed first send costs two statements: the claim, one INSERT … ON CONFLICT DO
// UPDATE … WHERE whose WHERE clause admits only a key past its time to live or an
// abandoned claim of the same message, and the bind, one UPDATE guarded by the fencing
// token. A retry costs the claim and one SELECT. Release is one DELETE guarded by the
// token. When a guarded statement changes nothing, one SELECT tells the caller why.
// [Store.Extend], which keeps a running send's lease alive, is one UPDATE guarded by
// the token, the key being pending and its lease still running, by the database's
// clock; it needs no second statement, since every failure is [idempotency.ErrNotOwner].
// Fencing tokens are 63 random bits from crypto/rand, so that tokens are unique across
// every process sharing the table without coordination.
//
// On PostgreSQL every statement runs on its own at the default READ COMMITTED level.
// ON CONFLICT waits for a concurrent claim of the same key to commit and then judges
// the WHERE clause against the committed row, so exactly one claim wins. The SELECT
// that follows a claim that did not win runs on a newer snapshot and may find the key
// already released or expired; Claim then starts over instead of guessing. lib/pq
// parses every statement anew; the pgx stdlib driver caches prepared statements, which
// more than doubled claims per second in a pgbench run of the claim statement.
//
// # Connections
//
// The middleware calls the index from every send in flight, and keeps each running
// send's claim alive with an extension every third of the lease, each within a third
// of the lease. database/sql keeps 2 idle connections by default, so on a busy server
// most of those calls open a connection and close it after (on PostgreSQL a new server
// process each time), and under load an extension that must connect first can miss its
// deadline: the lease then ends under a send still running, and a retry on another
// server takes its claim over and runs the agent again. Two servers on one PostgreSQL
// with 2-second leases, 50 five-second sends in flight, on 2 busy cores, ran 2 to 45 keys
// of 100 twice that way; none with 32 idle connections. [Open] keeps [IdleConns]; a
// handle of your own wants db.SetMaxIdleConns of at least the store calls a server
// makes at once (the sends it has in flight), and a lease long beside the index's
// latency under load (middleware.Options.Lease, default 30 s).
//
// # Clocks
//
// Every time the store writes or compares (claim time, lease end, time-to-live and
// sweep cutoffs) comes from one clock. When [Options.Now] is nil that is the database's
// clock, read inside each statement (PostgreSQL's now(), the start of the statement's
// transaction; SQLite's julianday('now'), the clock of the host running the process,
// to the millisecond), so replicas whose own clocks disagree still agree on leases.
// When Options.Now is set, its value, truncated to the microsecond, is passed as a
// statement parameter instead; every process sharing the table must then use clocks
// that agree. Tests set it to move time.
//
// # SQLite
//
// SQLite serializes writers with a lock on the database file. A statement that finds
// the file locked waits inside SQLite for up to the DSN's busy timeout, then fails with
// SQLITE_BUSY ("database is locked"); such a statement changed nothing. The store runs
// it again after short pauses until ctx ends (at most 5 seconds in all), because
// SQLite's own wait does not observe ctx: a short busy timeout and the store's retries
// together let a request's deadline end the wait. When the wait ends, the error is
// returned, so a claim that met a busy database fails closed and the middleware
// answers 503. Open SQLite files with
//
//	file:keys.db?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16
//
// WAL lets readers (Lookup) run beside the writer; _busy_timeout (milliseconds; the
// mattn/go-sqlite3 default is 5000) bounds each wait inside SQLite; _txlock=immediate
// makes the transactions of other code sharing the handle take the write lock up front,
// which avoids deadlocks that no busy timeout resolves; _stmt_cache_size keeps the
// store's few statements prepared on each connection (parsing the claim costs more than
// running it: the cache roughly tripled claims per second in this package's
// benchmark). Several *sqlx.DB handles, in one process or several, may open the same
// file. Do not put the file on a network file system. An in-memory database
// (":memory:") is private to one connection: call db.SetMaxOpenConns(1).
//
// # Durability
//
// mattn/go-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1: in WAL mode a
// commit is synchronous=NORMAL unless the URL says otherwise. A claim or bind that
// committed survives the death of the process (the kit's crash harness kills the
// server mid-send hundreds of times), but the last commits before a power loss or an
// operating system crash may be lost, and a lost claim lets its retry run the agent
// again. Where that is unacceptable, add _synchronous=FULL to the URL: every commit
// then waits for the disk. PostgreSQL commits are durable at its own settings.
//
// # Retention
//
// Keys past the store's time to live ([Options.TTL]) count as absent in every method
// but stay in the table until [Store.PurgeExpired] deletes them, in short batches that
// each lock only the rows they delete. Call it from a timer or a cron job; several
// replicas may call it at once. With [Options.TaskTable] set, the sweep keeps every
// key bound to a task still in that table, whatever its age, so that a key is never
// deleted while its task exists; sqlstore/a2atasks runs the task sweep and then this
// one.
package sqlstore
