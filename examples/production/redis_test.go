//go:build cgo

package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
	"github.com/a2akit/idempotency/redisstore/redistest"
)

// TestRedis runs the demonstration (a keyed send cut mid-run and retried until its
// task completes, then a reused key, then keyedclient) on both bindings, and with a
// tenant, against the server with its keys in Redis and its tasks in a SQLite file, as
// TestSQLite does with both in the file.
func TestRedis(t *testing.T) {
	store := filepath.Join(t.TempDir(), "idempotency.db")
	srv := examplerun.Start(t, run, "-grpc", "127.0.0.1:0", "-store", store, "-keys", redisKeys(t), "-delay", "1s")
	examplerun.CheckServer(t, srv, "tasks in SQLite file "+store+", keys in Redis ")
	examplerun.CheckDemos(t, srv, retrydemo.TaskDemo, "jsonrpc", "rest", "rest acme")
}

// TestRedisReplyMessage: an agent that answers with a Message; a retry gets the same
// Message from Redis, and the agent ran once.
func TestRedisReplyMessage(t *testing.T) {
	srv := examplerun.Start(t, run, "-grpc", "127.0.0.1:0", "-store", filepath.Join(t.TempDir(), "keys.db"), "-keys", redisKeys(t),
		"-reply", "message", "-delay", "0")
	examplerun.CheckDemos(t, srv, retrydemo.MessageDemo, "jsonrpc", "rest")
}

// TestRedisRestart: the server is restarted with Redis kept (and its task file): a
// retry of a send from before the restart gets the send's task, and the agent does not
// run again.
func TestRedisRestart(t *testing.T) {
	examplerun.CheckRestart(t, run, "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-keys", redisKeys(t), "-delay", "100ms")
}

// redisKeys returns the -keys URL of the test server with a prefix of the test's own,
// and checks when the test ends that the server kept keys there (the example did not
// fall back to its SQL key table).
func redisKeys(t *testing.T) string {
	t.Helper()
	url := redistest.URL(t)
	prefix := redistest.Prefix(t, url)
	rdb := redistest.Client(t, url)
	t.Cleanup(func() {
		if n, err := rdb.Keys(context.Background(), prefix+"*").Result(); err != nil || len(n) == 0 {
			t.Errorf("Redis holds %d keys under the test's prefix (%v); want the example's keys there", len(n), err)
		}
	})
	return url + "?prefix=" + prefix
}
