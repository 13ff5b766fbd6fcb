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

// queries holds a store's SQL text, built once by New. Every clock parameter is NULL
// when the store runs on the database's clock, and the statement then reads it.
type queries struct {
	// create: $1 id, $2 context id, $3 state, $4 status time (ns) or NULL, $5 owner,
	// $6 tenant, $7 task JSON, $8 now or NULL. Affects no row when the id is taken.
	create string
	// update: $1 id, $2 context id, $3 state, $4 status time (ns) or NULL, $5 task
	// JSON, $6 owner, $7 previous version or 0, $8 now or NULL. Returns the new version.
	update string
	// version: $1 id. owner, version.
	version string
	// get: $1 id. task, version, owner.
	get string
	// list: $1 owner, $2 context id or '', $3 state or '', $4 status after (ns) or NULL,
	// $5 cursor time or NULL, $6 cursor id, $7 limit. id, task, updated_at, newest first.
	list string
	// count: $1 … $4 as list. How many tasks the filters admit.
	count string
	// purge: $1 now or NULL, $2 retention (µs), $3 batch size.
	purge string
	// purgeLeft: $1 now or NULL, $2 retention (µs). Whether purge would delete anything.
	purgeLeft string
	// migrate: the DDL statements, in order.
	migrate []string
	// lockKey is the PostgreSQL advisory lock key that serializes migrations.
	lockKey int64
}

func buildQueries(d sqlstore.Dialect, schema, name string) queries {
	t := `"` + name + `"`
	if schema != "" {
		t = `"` + schema + `".` + t
	}
	var now, text, bigint, bytea, tstz, age, idType, timeType, blob, collateC string
	switch d {
	case sqlstore.PostgreSQL:
		now = "COALESCE($%d::timestamptz, now())"
		text, bigint, bytea, tstz = "::text", "::bigint", "::bytea", "::timestamptz"
		age = "$2::bigint * interval '1 microsecond'"
		idType, timeType, blob = `TEXT COLLATE "C"`, "TIMESTAMPTZ", "BYTEA"
		// Task ids compare byte by byte, as a2a-go's store compares them.
		collateC = ` COLLATE "C"`
	case sqlstore.SQLite:
		now = "COALESCE($%d, " + sqlrun.SQLiteNowMicros + ")"
		age = "$2"
		idType, timeType, blob = "TEXT", "INTEGER", "BLOB"
	}
	r := strings.NewReplacer("{t}", t, "{text}", text, "{bigint}", bigint, "{bytea}", bytea, "{tstz}", tstz, "{C}", collateC)
	q := func(tmpl string, nowParam int) string {
		s := r.Replace(strings.ReplaceAll(tmpl, "{now}", fmt.Sprintf(now, nowParam)))
		if d == sqlstore.SQLite {
			s = strings.ReplaceAll(s, "$", "?")
		}
		return s
	}

	var qs queries
	qs.create = q(`INSERT INTO {t} (id, context_id, state, status_ns, owner, tenant, version, task, created_at, updated_at)
VALUES ($1, $2, $3, $4{bigint}, $5, $6, 1, $7{bytea}, {now}, {now})
ON CONFLICT (id) DO NOTHING`, 8)
	qs.update = q(`UPDATE {t} SET context_id = $2, state = $3, status_ns = $4{bigint}, task = $5{bytea},
	version = version + 1, updated_at = {now}
WHERE id = $1 AND owner = $6 AND ($7{bigint} = 0 OR version = $7{bigint})
RETURNING version`, 8)
	qs.version = q(`SELECT owner, version FROM {t} WHERE id = $1`, 0)
	qs.get = q(`SELECT task, version, owner FROM {t} WHERE id = $1`, 0)

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
	updated_at ` + timeType + ` NOT NULL
)`,
		`CREATE INDEX IF NOT EXISTS ` + index("_list_idx") + ` (owner, updated_at DESC, id DESC)`,
		`CREATE INDEX IF NOT EXISTS ` + index("_sweep_idx") + ` (updated_at) WHERE state IN (` + terminalStates + `)`,
	}
	h := fnv.New64a()
	h.Write([]byte("github.com/a2akit/idempotency/sqlstore/a2atasks:" + schema + "." + name))
	qs.lockKey = int64(h.Sum64())
	return qs
}
