//go:build cgo

package a2atasks_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	_ "github.com/mattn/go-sqlite3"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

func Example() {
	// A real server opens a file, e.g.
	// "file:a2a.db?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16",
	// and gives the task store to a2asrv.NewHandler with a2asrv.WithTaskStore(tasks).
	db, err := sql.Open("sqlite3", ":memory:") // a plain *sql.DB; a *sqlx.DB works too
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // an in-memory database lives in one connection

	keys, err := sqlstore.New(db, sqlstore.Options{TaskTable: a2atasks.DefaultTable})
	if err != nil {
		log.Fatal(err)
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{
		Keys: keys,
		// Outside an a2asrv handler there is no call context: name the owner here.
		Authenticator: func(context.Context) (string, error) { return "alice", nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := tasks.Migrate(ctx); err != nil { // both tables
		log.Fatal(err)
	}

	task := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	v1, err := tasks.Create(ctx, task)
	if err != nil {
		log.Fatal(err)
	}
	task.Status.State = a2a.TaskStateCompleted
	v2, err := tasks.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: v1})
	if err != nil {
		log.Fatal(err)
	}
	_, err = tasks.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: v1})
	fmt.Println("versions:", v1, v2, "; an update from v1 again:", errors.Is(err, taskstore.ErrConcurrentModification))

	stored, err := tasks.Get(ctx, "task-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(stored.Task.ID, stored.Task.Status.State, "owner", stored.User)

	rep, err := tasks.PurgeExpired(ctx, idempotency.RetentionPolicy{TerminalTaskRetention: 7 * 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("swept: %d tasks, %d keys\n", rep.TasksDeleted, rep.KeysDeleted)
	// Output:
	// versions: 1 2 ; an update from v1 again: true
	// task-1 TASK_STATE_COMPLETED owner alice
	// swept: 0 tasks, 0 keys
}
