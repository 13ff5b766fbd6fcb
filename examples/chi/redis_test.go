//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/examples/internal/exampletest"
)

// TestRedis runs the demonstration against the chi server with its keys in Redis and
// its tasks in a SQLite file, as TestSQLite does with both in the file.
func TestRedis(t *testing.T) {
	store := filepath.Join(t.TempDir(), "idempotency.db")
	srv := exampletest.Start(t, run, "-store", store, "-keys", exampletest.RedisKeys(t), "-delay", "1s")
	exampletest.CheckServer(t, srv, "tasks in SQLite file "+store+", keys in Redis ")
	for _, tc := range []struct{ name, binding, tenant string }{
		{"rest tenant acme", "rest", "acme"},
		{"jsonrpc", "jsonrpc", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exampletest.CheckTaskDemo(t, exampletest.RunDemo(t, exampletest.DemoOptions(srv.URL, tc.binding, tc.tenant)))
		})
	}
}

// TestRedisRestart: restarted with Redis kept, the server answers a retry of a send
// from before the restart with its task, and the agent does not run again.
func TestRedisRestart(t *testing.T) {
	exampletest.CheckRestart(t, run, "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-keys", exampletest.RedisKeys(t), "-delay", "100ms")
}
