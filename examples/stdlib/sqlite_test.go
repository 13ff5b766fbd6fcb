//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// TestSQLite runs the demonstration on both bindings, and with a tenant, against the
// server with its tasks and keys in a SQLite file, as `go run ./examples/stdlib`
// starts it, and restarts it on the file: a retry of a send from before the restart
// gets the send's task.
func TestSQLite(t *testing.T) {
	examplerun.CheckSQLite(t, run, nil, retrydemo.TaskDemo, "jsonrpc", "rest", "rest acme")
}

// TestReplyMessage runs the demonstration against an agent that answers with a
// Message at once: a retry gets the same Message, and the agent ran once.
func TestReplyMessage(t *testing.T) {
	srv := examplerun.Start(t, run, "-store", filepath.Join(t.TempDir(), "keys.db"), "-reply", "message", "-delay", "0")
	examplerun.CheckDemos(t, srv, retrydemo.MessageDemo, "jsonrpc", "rest")
}
