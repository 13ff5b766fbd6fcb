package main

import (
	"testing"

	"github.com/a2akit/idempotency/examples/internal/exampletest"
)

// The tests in this package start the server in-process and read the agent's runs
// from /debug/vars, which counts every run in the process: they must not run in
// parallel.

// TestPostgres runs the demonstration against the chi server with its tasks and
// keys in PostgreSQL, on the tenant path and on JSON-RPC with a tenant.
func TestPostgres(t *testing.T) {
	dsn := exampletest.PostgresDSN(t)
	table := exampletest.PostgresTable(t, dsn, "examples_chi")
	tasks := exampletest.PostgresTable(t, dsn, "examples_chi_tasks")
	srv := exampletest.Start(t, run, "-store", dsn, "-table", table, "-tasks", tasks, "-delay", "1s")
	exampletest.CheckServer(t, srv, "tasks and keys in PostgreSQL")
	for _, binding := range []string{"rest", "jsonrpc"} {
		t.Run(binding+" tenant acme", func(t *testing.T) {
			exampletest.CheckTaskDemo(t, exampletest.RunDemo(t, exampletest.DemoOptions(srv.URL, binding, "acme")))
		})
	}
}

// The server leaks no DSN password and no debug variables on its public listener,
// and cuts off a stalled request body.
func TestNoLeaks(t *testing.T) {
	exampletest.CheckNoLeaks(t, run, "examples_chi_leaks")
}
