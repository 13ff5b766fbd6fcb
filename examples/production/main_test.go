package main

import (
	"testing"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
)

// The tests in this package start the server in-process and read the agent's runs
// from /debug/vars, which counts every run in the process: they must not run in
// parallel.

// TestPostgres runs the demonstration on both bindings, without a tenant and with
// one (on the tenant path, and on JSON-RPC), against the server with its tasks and
// keys in PostgreSQL.
func TestPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	table := testdb.TempTable(t, dsn, "examples_production")
	tasks := testdb.TempTable(t, dsn, "examples_production_tasks")
	srv := examplerun.Start(t, run, "-grpc", "127.0.0.1:0", "-store", dsn, "-table", table, "-tasks", tasks, "-delay", "1s")
	examplerun.CheckServer(t, srv, "tasks and keys in PostgreSQL")
	examplerun.CheckDemos(t, srv, retrydemo.TaskDemo, "jsonrpc", "rest", "rest acme", "jsonrpc acme")
}

func TestBadFlags(t *testing.T) { examplerun.CheckBadFlags(t, run) }

// The server leaks no DSN password and no debug variables on its public listener,
// and cuts off a stalled request body.
func TestNoLeaks(t *testing.T) {
	examplerun.CheckNoLeaks(t, run, "examples_production_leaks")
}
