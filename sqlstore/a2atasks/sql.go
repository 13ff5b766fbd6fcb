package a2atasks

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// terminalStates are the states a task never leaves, in SQL.
var terminalStates = "'" + strings.Join([]string{
	string(a2a.TaskStateCompleted), string(a2a.TaskStateCanceled),
	string(a2a.TaskStateFailed), string(a2a.TaskStateRejected),
}, "', '") + "'"

// activeStates are the states in which an execution works on a task: the states
// whose run liveness the store watches (see the package documentation, "Runs").
var activeStates = "'" + string(a2a.TaskStateSubmitted) + "', '" + string(a2a.TaskStateWorking) + "'"

// queries holds a store's SQL text, built once by New. Every clock parameter is NULL
// when the store runs on the database's clock, and the statement then reads it.
type queries struct {
	// create: $1 id, $2 context id, $3 state, $4 status time (ns) or NULL, $5 owner,
	// $6 tenant, $7 task JSON, $8 now or NULL, $9 run lease (µs) or NULL when the run
	// is not watched. Affects no row when the id is taken.
	create string
	// update: $1 id, $2 context id, $3 state, $4 status time (ns) or NULL, $5 task
	// JSON, $6 owner, $7 previous version or 0, $8 now or NULL, $9 run lease (µs) or
	// NULL. Returns the new version.
	update string
	// version: $1 id. owner, version.
	version string
	// get: $1 id, $2 now or NULL. task, version, owner, whether its run is dead.
	get string
	// dead: $1 now or NULL, $2 limit. id, task, version of tasks whose run is dead.
	dead string
	// fail: $1 id, $2 version, $3 status time (ns), $4 task JSON, $5 now or NULL. Ends
	// a task whose run is dead; returns the new version.
	fail string
	// heartbeat: $1 JSON array of task ids, $2 run lease (µs), $3 now or NULL.
	heartbeat string
	// unwatch: $1 id. Says that no run of the task is watched any more.
	unwatch string
	// stopAll: $1 now or NULL. Ends the liveness of every watched run now.
	stopAll string
	// list: $1 owner, $2 context id or '', $3 state or '', $4 status after (ns) or NULL,
	// $5 cursor time or NULL, $6 cursor id, $7 limit. id, task, updated_at, newest first.
	list string
	// count: $1 … $4 as list. How many tasks the filters admit.
	count string
	// purge: $1 now or NULL, $2 retention (µs), $3 batch size.
	purge string
	// purgeLeft: $1 now or NULL, $2 retention (µs). Whether purge would delete anything.
	purgeLeft string
	// migrate: the DDL statements, in order; then, once the column exists (addColumn,
	// or on SQLite hasColumn tells), migrateRuns.
	migrate     []string
	addColumn   string
	hasColumn   string
	migrateRuns []string
	// lockKey is the PostgreSQL advisory lock key that serializes migrations.
	lockKey int64
}

func buildQueries(d sqlstore.Dialect, schema, name string) queries {
	t := `"` + name + `"`
	if schema != "" {
		t = `"` + schema + `".` + t
	}
	var now, text, bigint, bytea, tstz, age, idType, timeType, blob, collateC, micros, ids string
	switch d {
	case sqlstore.PostgreSQL:
		now = "COALESCE($%d::timestamptz, now())"
		text, bigint, bytea, tstz = "::text", "::bigint", "::bytea", "::timestamptz"
		age = "$2::bigint * interval '1 microsecond'"
		micros = "$%d::bigint * interval '1 microsecond'"
		ids = "SELECT jsonb_array_elements_text($1::jsonb)"
		idType, timeType, blob = `TEXT COLLATE "C"`, "TIMESTAMPTZ", "BYTEA"
		// Task ids compare byte by byte, as a2a-go's store compares them.
		collateC = ` COLLATE "C"`
	case sqlstore.SQLite:
		now = "COALESCE($%d, " + sqlrun.SQLiteNowMicros + ")"
		age = "$2"
		micros = "$%d"
		ids = "SELECT value FROM json_each($1)"
		idType, timeType, blob = "TEXT", "INTEGER", "BLOB"
	}
	r := strings.NewReplacer("{ids}", ids, "{run9}", fmt.Sprintf(micros, 9), "{run2}", fmt.Sprintf(micros, 2), "{t}", t, "{text}", text, "{bigint}", bigint, "{bytea}", bytea, "{tstz}", tstz, "{C}", collateC)
	q := func(tmpl string, nowParam int) string {
		s := r.Replace(strings.ReplaceAll(tmpl, "{now}", fmt.Sprintf(now, nowParam)))
		if d == sqlstore.SQLite {
			s = strings.ReplaceAll(s, "$", "?")
		}
		return s
	}

	var qs queries
	// A run is watched while its task is active: alive_until is then the end of its
	// liveness, renewed by the heartbeat; NULL when no run is watched.
	qs.create = q(`INSERT INTO {t} (id, context_id, state, status_ns, owner, tenant, version, task, created_at, updated_at, alive_until)
VALUES ($1, $2, $3, $4{bigint}, $5, $6, 1, $7{bytea}, {now}, {now},
	CASE WHEN $9{bigint} IS NULL OR $3 NOT IN (`+activeStates+`) THEN NULL ELSE {now} + {run9} END)
ON CONFLICT (id) DO NOTHING`, 8)
	qs.update = q(`UPDATE {t} SET context_id = $2, state = $3, status_ns = $4{bigint}, task = $5{bytea},
	version = version + 1, updated_at = {now},
	alive_until = CASE WHEN $3 NOT IN (`+activeStates+`) THEN NULL
		WHEN $9{bigint} IS NULL THEN alive_until ELSE {now} + {run9} END
WHERE id = $1 AND owner = $6 AND ($7{bigint} = 0 OR version = $7{bigint})
RETURNING version`, 8)
	qs.version = q(`SELECT owner, version FROM {t} WHERE id = $1`, 0)
	dead := `state IN (` + activeStates + `) AND alive_until IS NOT NULL AND alive_until <= {now}`
	qs.get = q(`SELECT task, version, owner, CASE WHEN `+dead+` THEN 1 ELSE 0 END FROM {t} WHERE id = $1`, 2)
	qs.dead = q(`SELECT id, task, version FROM {t} WHERE `+dead+` LIMIT $2`, 1)
	qs.fail = q(`UPDATE {t} SET state = '`+string(a2a.TaskStateFailed)+`', status_ns = $3{bigint}, task = $4{bytea},
	version = version + 1, updated_at = {now}, alive_until = NULL
WHERE id = $1 AND version = $2{bigint} AND `+dead+`
RETURNING version`, 5)
	qs.heartbeat = q(`UPDATE {t} SET alive_until = {now} + {run2}
WHERE alive_until IS NOT NULL AND id IN ({ids})`, 3)
	qs.unwatch = q(`UPDATE {t} SET alive_until = NULL WHERE id = $1 AND alive_until IS NOT NULL`, 0)
	qs.stopAll = q(`UPDATE {t} SET alive_until = {now} WHERE alive_until > {now}`, 1)

	// The in-memory store keeps a task without a status timestamp whatever the
	// timestamp filter says; so does this one.
	const filters = `owner = $1 AND ($2{text} = '' OR context_id = $2{text}) AND ($3{text} = '' OR state = $3{text})
	AND ($4{bigint} IS NULL OR status_ns IS NULL OR status_ns >= $4{bigint})`
	qs.list = q(`SELECT id, task, updated_at FROM {t}
WHERE `+filters+`
	AND ($5{tstz} IS NULL OR updated_at < $5{tstz} OR (updated_at = $5{tstz} AND id < $6{text}{C}))
ORDER BY updated_at DESC, id DESC
LIMIT $7`, 0)
	qs.count = q(`SELECT COUNT(*) FROM {t} WHERE `+filters, 0)

	purgeable := `state IN (` + terminalStates + `) AND updated_at <= {now} - ` + age
	switch d {
	case sqlstore.PostgreSQL:
		// As the key sweep: rows picked by ctid with SKIP LOCKED, so concurrent sweeps
		// split the work, and the conditions checked again on the row the DELETE finds.
		qs.purge = q(`DELETE FROM {t} WHERE ctid = ANY(ARRAY(
	SELECT ctid FROM {t} WHERE `+purgeable+`
	LIMIT $3 FOR UPDATE SKIP LOCKED))
AND `+purgeable, 1)
	case sqlstore.SQLite:
		qs.purge = q(`DELETE FROM {t} WHERE rowid IN (
	SELECT rowid FROM {t} WHERE `+purgeable+` LIMIT $3)`, 1)
	}
	qs.purgeLeft = q(`SELECT EXISTS (SELECT 1 FROM {t} WHERE `+purgeable+`)`, 1)

	index := func(suffix string) string {
		if d == sqlstore.SQLite && schema != "" {
			return `"` + schema + `"."` + name + suffix + `" ON "` + name + `"`
		}
		return `"` + name + suffix + `" ON ` + t
	}
	qs.migrate = []string{
		`CREATE TABLE IF NOT EXISTS ` + t + ` (
	id ` + idType + ` NOT NULL PRIMARY KEY,
	context_id TEXT NOT NULL,
	state TEXT NOT NULL,
	status_ns BIGINT,
	owner TEXT NOT NULL,
	tenant TEXT NOT NULL,
	version BIGINT NOT NULL,
	task ` + blob + ` NOT NULL,
	created_at ` + timeType + ` NOT NULL,
	updated_at ` + timeType + ` NOT NULL,
	alive_until ` + timeType + `
)`,
		`CREATE INDEX IF NOT EXISTS ` + index("_list_idx") + ` (owner, updated_at DESC, id DESC)`,
		`CREATE INDEX IF NOT EXISTS ` + index("_sweep_idx") + ` (updated_at) WHERE state IN (` + terminalStates + `)`,
	}
	// Tables made before runs were watched lack alive_until.
	qs.addColumn = `ALTER TABLE ` + t + ` ADD COLUMN alive_until ` + timeType
	if d == sqlstore.PostgreSQL {
		qs.addColumn = `ALTER TABLE ` + t + ` ADD COLUMN IF NOT EXISTS alive_until ` + timeType
	}
	pragma := "pragma_table_info('" + name + "')"
	if schema != "" {
		pragma = "pragma_table_info('" + name + "', '" + schema + "')"
	}
	qs.hasColumn = `SELECT COUNT(*) FROM ` + pragma + ` WHERE name = 'alive_until'`
	qs.migrateRuns = []string{
		`CREATE INDEX IF NOT EXISTS ` + index("_runs_idx") + ` (alive_until) WHERE alive_until IS NOT NULL`,
	}
	h := fnv.New64a()
	h.Write([]byte("github.com/a2akit/idempotency/sqlstore/a2atasks:" + schema + "." + name))
	qs.lockKey = int64(h.Sum64())
	return qs
}
