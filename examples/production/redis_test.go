//go:build cgo

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2akit/idempotency/examples/internal/exampletest"
)

// TestRedis runs the demonstration (a keyed send cut mid-run and retried until its
// task completes, then a reused key, then keyedclient) on both bindings, and with a
// tenant, against the server with its keys in Redis and its tasks in a SQLite file, as
// TestSQLite does with both in the file.
func TestRedis(t *testing.T) {
	store := filepath.Join(t.TempDir(), "idempotency.db")
	srv := exampletest.Start(t, run, "-grpc", "127.0.0.1:0", "-store", store, "-keys", exampletest.RedisKeys(t), "-delay", "1s")
	exampletest.CheckServer(t, srv, "tasks in SQLite file "+store+", keys in Redis ")
	for _, tc := range []struct{ binding, tenant string }{
		{"jsonrpc", ""},
		{"rest", ""},
		{"rest", "acme"},
	} {
		t.Run(strings.TrimSuffix(tc.binding+" tenant "+tc.tenant, " tenant "), func(t *testing.T) {
			exampletest.CheckTaskDemo(t, exampletest.RunDemo(t, exampletest.DemoOptions(srv.URL, tc.binding, tc.tenant)))
		})
	}
}

// TestRedisReplyMessage: an agent that answers with a Message; a retry gets the same
// Message from Redis, and the agent ran once.
func TestRedisReplyMessage(t *testing.T) {
	srv := exampletest.Start(t, run, "-grpc", "127.0.0.1:0", "-store", filepath.Join(t.TempDir(), "keys.db"), "-keys", exampletest.RedisKeys(t),
		"-reply", "message", "-delay", "0")
	for _, binding := range []string{"jsonrpc", "rest"} {
		t.Run(binding, func(t *testing.T) {
			exampletest.CheckMessageDemo(t, exampletest.RunDemo(t, exampletest.DemoOptions(srv.URL, binding, "")))
		})
	}
}

// TestRedisRestart: the server is restarted with Redis kept (and its task file): a
// retry of a send from before the restart gets the send's task, and the agent does not
// run again.
func TestRedisRestart(t *testing.T) {
	exampletest.CheckRestart(t, run, "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-keys", exampletest.RedisKeys(t), "-delay", "100ms")
}
