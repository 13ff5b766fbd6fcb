//go:build cgo

package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// The tests in this package start the server in-process and read the agent's runs
// from /debug/vars, which counts every run in the process: they must not run in
// parallel. examples/production runs the demonstrations on PostgreSQL, with tenants.

// TestSQLite runs the demonstration against the chi server with its tasks and keys in
// a SQLite file: on the tenant path (/tenants/{tenant}/...), on JSON-RPC with a
// tenant, and on HTTP+JSON without one; then restarts it on the file: a retry of a
// send from before the restart gets the send's task.
func TestSQLite(t *testing.T) {
	examplerun.CheckSQLite(t, run, nil, retrydemo.TaskDemo, "rest acme", "jsonrpc acme", "rest")
}

// TestTenantPath sends keyed messages that name their tenant only in the path, as a
// plain HTTP client may: a key is scoped by that tenant, so another tenant may use the
// same key, and a retry in the first tenant gets its own task.
func TestTenantPath(t *testing.T) {
	srv := examplerun.Start(t, run, "-store", filepath.Join(t.TempDir(), "keys.db"), "-delay", "0")
	const key = "tenant-path-key-0123456789"
	acme, beta := srv.URL+"/tenants/acme/message:send", srv.URL+"/tenants/beta/message:send"

	first := taskID(t, acme, examplerun.KeyedSendBody("m-acme", key, "hello from acme"))
	other := taskID(t, beta, examplerun.KeyedSendBody("m-beta", key, "hello from beta"))
	if other == first {
		t.Errorf("tenant beta's send with acme's key got acme's task %s", first)
	}
	if again := taskID(t, acme, examplerun.KeyedSendBody("m-acme", key, "hello from acme")); again != first {
		t.Errorf("acme's retry got task %s, want %s, the task of its first send", again, first)
	}
	status, body := examplerun.Send(t, acme, examplerun.KeyedSendBody("m-acme-2", key, "another message"))
	if status != http.StatusBadRequest || !strings.Contains(body, "already held") {
		t.Errorf("acme's key reused for another message got %d %s, want 400 with \"already held\"", status, body)
	}
}

// taskID sends body to url and returns the id of the task in the answer.
func taskID(t *testing.T, url, body string) string {
	t.Helper()
	status, answer := examplerun.Send(t, url, body)
	var res struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(answer), &res); status != http.StatusOK || err != nil || res.Task.ID == "" {
		t.Fatalf("POST %s: %d %s, want 200 with a task", url, status, answer)
	}
	return res.Task.ID
}
