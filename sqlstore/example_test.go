//go:build cgo

package sqlstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

func Example() {
	// A real server opens a file, e.g.
	// "file:keys.db?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16".
	db, err := sqlx.Open("sqlite3", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // an in-memory database lives in one connection

	store, err := sqlstore.New(db, sqlstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	const key = "7f3c9a2e51d84b6f9a0c3e5d7b1f2a4c"
	first, err := store.Claim(ctx, "tenant-a", key, "msg-1", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first send:", first.Status)
	if err := store.Bind(ctx, "tenant-a", key, first.Token, idempotency.Binding{TaskID: "task-1"}); err != nil {
		log.Fatal(err)
	}

	retry, err := store.Claim(ctx, "tenant-a", key, "msg-1", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retry:", retry.Status, "→", retry.Record.TaskID)

	reuse, err := store.Claim(ctx, "tenant-a", key, "msg-2", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("another message:", reuse.Status)

	rep, err := store.PurgeExpired(ctx, idempotency.RetentionPolicy{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("purged:", rep.KeysDeleted)
	// Output:
	// first send: claimed
	// retry: held by same message → task-1
	// another message: held by other message
	// purged: 0
}
