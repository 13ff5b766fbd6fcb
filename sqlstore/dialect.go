package sqlstore

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// Dialect selects the SQL a [Store] speaks.
type Dialect int

const (
	// DetectDialect, the zero value, takes the dialect from the database handle: see
	// [DialectOf].
	DetectDialect Dialect = iota
	// SQLite is SQLite 3.24 or later (UPSERT), as served by github.com/mattn/go-sqlite3.
	SQLite
	// PostgreSQL is PostgreSQL 9.5 or later (ON CONFLICT), as served by
	// github.com/lib/pq or github.com/jackc/pgx/v5/stdlib.
	PostgreSQL
)

func (d Dialect) String() string {
	switch d {
	case DetectDialect:
		return "detect"
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// dialectOf maps a database/sql driver name to its dialect.
func dialectOf(driverName string) (Dialect, bool) {
	switch driverName {
	case "sqlite3":
		return SQLite, true
	case "postgres", "pgx", "pgx/v5":
		return PostgreSQL, true
	}
	return DetectDialect, false
}

// tableName is a validated, optionally schema-qualified table name.
type tableName struct {
	schema, name string
}

func parseTableName(s string) (tableName, error) {
	schema, name, err := sqlrun.ParseTable(s)
	return tableName{schema: schema, name: name}, err
}

// quoted returns the table name for SQL text, every part double-quoted (both dialects
// accept double quotes, and quoting makes reserved words safe). Names are used exactly
// as given, case included.
func (t tableName) quoted() string {
	if t.schema == "" {
		return `"` + t.name + `"`
	}
	return `"` + t.schema + `"."` + t.name + `"`
}

func (t tableName) String() string {
	if t.schema == "" {
		return t.name
	}
	return t.schema + "." + t.name
}

// indexName is the unquoted name of the sweep index.
func (t tableName) indexName() string { return t.name + "_claimed_at_idx" }

// lockKey is the PostgreSQL advisory lock key that serializes migrations of the table.
func (t tableName) lockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/a2akit/idempotency/sqlstore:" + t.String()))
	return int64(h.Sum64())
}

// queries holds a store's SQL text, built once by New. Parameters are numbered; the
// clock parameter, present only when Options.Now is set, is always the last.
type queries struct {
	// claim: $1 scope, $2 key, $3 message id, $4 token, $5 lease (µs) [, $6 now].
	// Inserts a pending claim, or replaces a key past its time to live, or takes over
	// an abandoned claim of the same message; affects 1 row when the caller won.
	claim string
	// read: $1 scope, $2 key [, $3 now]. The live (not expired) row:
	// message_id, task_id, reply, claimed_at, lease_expires_at, lease_ended.
	read string
	// owner: $1 scope, $2 key [, $3 now]. The live row: token, task_id, reply.
	owner string
	// bind: $1 scope, $2 key, $3 token, $4 task id or NULL, $5 reply or NULL [, $6 now].
	bind string
	// release: $1 scope, $2 key, $3 token.
	release string
	// extend: $1 scope, $2 key, $3 token, $4 lease (µs) [, $5 now]. Affects 1 row when
	// the claim is pending under token and its lease is still running.
	extend string
	// purge: $1 age (µs), $2 batch size [, $3 now]. With a task table, it keeps the
	// keys bound to a task still in it.
	purge string
	// purgeLeft: $1 age (µs) [, $2 now]. Whether purge would delete anything.
	purgeLeft string
	// migrate: the DDL statements, in order.
	migrate []string
}

func buildQueries(d Dialect, t, tasks tableName, ttl time.Duration, goClock bool) queries {
	ttlMicros := ttl.Microseconds()
	var nowDB, param, bigint, bytea, text, ttlExpr, lease, extendLease, age string
	switch d {
	case PostgreSQL:
		nowDB = "now()"
		param = "$%d::timestamptz"
		bigint, bytea, text = "::bigint", "::bytea", "::text"
		ttlExpr = fmt.Sprintf("interval '%d microseconds'", ttlMicros)
		lease = "$5::bigint * interval '1 microsecond'"
		extendLease = "$4::bigint * interval '1 microsecond'"
		age = "$1::bigint * interval '1 microsecond'"
	case SQLite:
		nowDB = sqlrun.SQLiteNowMicros
		param = "$%d"
		ttlExpr = fmt.Sprintf("%d", ttlMicros)
		lease = "$5"
		extendLease = "$4"
		age = "$1"
	}
	now := func(n int) string {
		if goClock {
			return fmt.Sprintf(param, n)
		}
		return nowDB
	}

	r := strings.NewReplacer("{t}", t.quoted(), "{ttl}", ttlExpr, "{lease}", lease, "{extendLease}", extendLease, "{age}", age,
		"{bigint}", bigint, "{bytea}", bytea, "{text}", text)
	q := func(tmpl string, nowParam int) string {
		s := r.Replace(strings.ReplaceAll(tmpl, "{now}", now(nowParam)))
		if d == SQLite {
			s = strings.ReplaceAll(s, "$", "?")
		}
		return s
	}

	var qs queries
	// The claim. EXCLUDED.claimed_at is the statement's "now". A key past its time
	// to live is replaced as new (new claim time); an abandoned claim (pending, lease
	// ended) of the same message is taken over and keeps its claim time. Every other
	// conflict leaves the row alone and affects no row.
	qs.claim = q(`INSERT INTO {t} AS k (scope, "key", message_id, token, claimed_at, lease_expires_at)
VALUES ($1, $2, $3, $4{bigint}, {now}, {now} + {lease})
ON CONFLICT (scope, "key") DO UPDATE SET
	message_id = excluded.message_id,
	task_id = NULL,
	reply = NULL,
	token = excluded.token,
	claimed_at = CASE WHEN k.claimed_at <= excluded.claimed_at - {ttl} THEN excluded.claimed_at ELSE k.claimed_at END,
	lease_expires_at = excluded.lease_expires_at
WHERE k.claimed_at <= excluded.claimed_at - {ttl}
	OR (k.task_id IS NULL AND k.reply IS NULL AND k.message_id = excluded.message_id
		AND k.lease_expires_at <= excluded.claimed_at)`, 6)

	qs.read = q(`SELECT message_id, task_id, reply, claimed_at, lease_expires_at, lease_expires_at <= {now}
FROM {t} WHERE scope = $1 AND "key" = $2 AND claimed_at > {now} - {ttl}`, 3)

	qs.owner = q(`SELECT token, task_id, reply
FROM {t} WHERE scope = $1 AND "key" = $2 AND claimed_at > {now} - {ttl}`, 3)

	// The bind: a pending claim takes the binding; a key bound to a task alone may
	// gain a reply for the same task. Everything else affects no row.
	qs.bind = q(`UPDATE {t} SET task_id = $4{text}, reply = $5{bytea}
WHERE scope = $1 AND "key" = $2 AND token = $3{bigint} AND claimed_at > {now} - {ttl} AND reply IS NULL
	AND (task_id IS NULL OR (task_id = $4{text} AND $5{bytea} IS NOT NULL))`, 6)

	// The release needs no clock: a pending claim past its time to live is absent
	// anyway, and deleting it is harmless.
	qs.release = q(`DELETE FROM {t}
WHERE scope = $1 AND "key" = $2 AND token = $3{bigint} AND task_id IS NULL AND reply IS NULL`, 0)

	// The extension: only a live, pending claim under token whose lease still runs.
	qs.extend = q(`UPDATE {t} SET lease_expires_at = {now} + {extendLease}
WHERE scope = $1 AND "key" = $2 AND token = $3{bigint} AND claimed_at > {now} - {ttl}
	AND task_id IS NULL AND reply IS NULL AND lease_expires_at > {now}`, 5)

	purgeable := `claimed_at <= {now} - {age}
		AND NOT (task_id IS NULL AND reply IS NULL AND lease_expires_at > {now})`
	if tasks.name != "" {
		// A key is never deleted while the task it names is still in the task table.
		purgeable += `
		AND (task_id IS NULL OR NOT EXISTS (SELECT 1 FROM ` + tasks.quoted() + ` tk WHERE tk.id = {t}.task_id))`
	}
	switch d {
	case PostgreSQL:
		// Rows are picked by ctid with SKIP LOCKED, so concurrent sweeps split the work
		// instead of queueing behind each other, and the conditions are checked again on
		// the row the DELETE finds, in case a claim renewed it in between.
		qs.purge = q(`DELETE FROM {t} WHERE ctid = ANY(ARRAY(
	SELECT ctid FROM {t} WHERE `+purgeable+`
	LIMIT $2 FOR UPDATE SKIP LOCKED))
AND `+purgeable, 3)
	case SQLite:
		qs.purge = q(`DELETE FROM {t} WHERE rowid IN (
	SELECT rowid FROM {t} WHERE `+purgeable+` LIMIT $2)`, 3)
	}
	qs.purgeLeft = q(`SELECT EXISTS (SELECT 1 FROM {t} WHERE `+purgeable+`)`, 2)

	// The table and its sweep index. The dialects differ in column types, and in where
	// the schema goes in CREATE INDEX: PostgreSQL creates the index in the table's
	// schema, SQLite names the index's schema and takes the table's name bare.
	index, on := `"`+t.indexName()+`"`, t.quoted()
	var blob, integer, instant string
	switch d {
	case PostgreSQL:
		blob, integer, instant = "BYTEA", "BIGINT", "TIMESTAMPTZ"
	case SQLite:
		blob, integer, instant = "BLOB", "INTEGER", "INTEGER"
		if t.schema != "" {
			index, on = `"`+t.schema+`".`+index, `"`+t.name+`"`
		}
	}
	qs.migrate = []string{
		`CREATE TABLE IF NOT EXISTS ` + t.quoted() + ` (
	scope TEXT NOT NULL,
	"key" TEXT NOT NULL,
	message_id TEXT NOT NULL,
	task_id TEXT,
	reply ` + blob + `,
	token ` + integer + ` NOT NULL,
	claimed_at ` + instant + ` NOT NULL,
	lease_expires_at ` + instant + ` NOT NULL,
	PRIMARY KEY (scope, "key")
)`,
		`CREATE INDEX IF NOT EXISTS ` + index + ` ON ` + on + ` (claimed_at)`,
	}
	return qs
}
