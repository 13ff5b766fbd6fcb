package pgxdriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// TestDialectOfPlainSQLDB: a plain *sql.DB opened with the pgx driver is PostgreSQL.
func TestDialectOfPlainSQLDB(t *testing.T) {
	db, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none") // sql.Open does not connect
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, ok := sqlstore.DialectOf(db); !ok || got != sqlstore.PostgreSQL {
		t.Errorf("DialectOf(sql.Open(\"pgx\")) = %v, %v; want postgres", got, ok)
	}
}

// TestTaskStore: the SQL task store round-trips a task through pgx, whose cached
// prepared statements and value types differ from lib/pq's, and keeps optimistic
// concurrency: an update from a stale version is refused.
func TestTaskStore(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	db := testdb.OpenPool(t, "pgx", dsn)
	schema := testkit.RandomName("pgx_tasks_")
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	keys, err := sqlstore.New(db, sqlstore.Options{Table: schema + ".keys", TaskTable: schema + ".tasks"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := a2atasks.New(db, a2atasks.Options{Table: schema + ".tasks", Keys: keys,
		Authenticator: func(context.Context) (string, error) { return "owner", nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	task := &a2a.Task{ID: a2a.NewTaskID(), ContextID: a2a.NewContextID(),
		Status:  a2a.TaskStatus{State: a2a.TaskStateWorking},
		History: []*a2a.Message{a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))}}
	v1, err := store.Create(ctx, task)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	done := *task
	done.Status = a2a.TaskStatus{State: a2a.TaskStateCompleted}
	if _, err := store.Update(ctx, &taskstore.UpdateRequest{Task: &done, PrevVersion: v1}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := store.Update(ctx, &taskstore.UpdateRequest{Task: &done, PrevVersion: v1}); err == nil {
		t.Error("an update from a stale version succeeded; want taskstore.ErrConcurrentModification")
	}
	got, err := store.Get(ctx, task.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want, _ := json.Marshal(&done)
	have, _ := json.Marshal(got.Task)
	if string(have) != string(want) {
		t.Errorf("Get returned\n%s\nwant\n%s", have, want)
	}
}
