//go:build cgo

package a2atasks_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// TestNewRefuses: New refuses what it cannot work with, before touching the database.
func TestNewRefuses(t *testing.T) {
	db := sqlx.MustOpen("sqlite3", ":memory:")
	defer db.Close()
	otherKeys, err := sqlstore.New(db, sqlstore.Options{TaskTable: "other_tasks"})
	if err != nil {
		t.Fatal(err)
	}
	unguardedKeys, err := sqlstore.New(db, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pgKeys, err := sqlstore.New(db, sqlstore.Options{Dialect: sqlstore.PostgreSQL, TaskTable: a2atasks.DefaultTable})
	if err != nil {
		t.Fatal(err)
	}
	var nilDB *sql.DB
	for _, c := range []struct {
		name string
		db   sqlstore.DB
		opts a2atasks.Options
		want string
	}{
		{"nil handle", nilDB, a2atasks.Options{}, "nil database handle"},
		{"unknown driver", sqlx.NewDb(db.DB, "mystery"), a2atasks.Options{}, "set Options.Dialect"},
		{"unknown dialect", db, a2atasks.Options{Dialect: 42}, "unknown"},
		{"bad table", db, a2atasks.Options{Table: "a.b.c"}, "more than one '.'"},
		{"keys naming another task table", db, a2atasks.Options{Keys: otherKeys}, `TaskTable: "a2a_tasks"`},
		{"keys without a task table", db, a2atasks.Options{Keys: unguardedKeys}, `TaskTable: "a2a_tasks"`},
		{"keys of another dialect", db, a2atasks.Options{Keys: pgKeys}, "speaks postgresql"},
	} {
		if _, err := a2atasks.New(c.db, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New returned %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestTenantRecorded: Create records the call's tenant and owner beside the task.
func TestTenantRecorded(t *testing.T) {
	db := sqlx.MustOpen("sqlite3", sqliteDSN(filepath.Join(t.TempDir(), "a2a.db")))
	defer db.Close()
	st, err := a2atasks.New(db, a2atasks.Options{Authenticator: ownerOf})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := a2a.AttachTenant(as("alice"), "tenant-7")
	if _, err := st.Create(ctx, &a2a.Task{ID: "t1", ContextID: "c"}); err != nil {
		t.Fatal(err)
	}
	var owner, tenant string
	if err := db.QueryRow(`SELECT owner, tenant FROM a2a_tasks WHERE id = 't1'`).Scan(&owner, &tenant); err != nil {
		t.Fatal(err)
	}
	if owner != "alice" || tenant != "tenant-7" {
		t.Errorf("recorded owner %q tenant %q, want alice and tenant-7", owner, tenant)
	}
}
