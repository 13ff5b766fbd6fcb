//go:build cgo

package main

import (
	"testing"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// TestSQLite runs the demonstration on both bindings, and with a tenant, against the
// server with its tasks and keys in a SQLite file, as `go run ./examples/production`
// starts it, and restarts it on the file: a retry of a send from before the restart
// gets the send's task.
func TestSQLite(t *testing.T) {
	examplerun.CheckSQLite(t, run, []string{"-grpc", "127.0.0.1:0"}, retrydemo.TaskDemo, "jsonrpc", "rest", "rest acme")
}
