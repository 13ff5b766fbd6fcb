//go:build cgo

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit/examplerun"
	"github.com/a2akit/idempotency/servercheck"
)

// TestChecker runs the black-box checker (cmd/a2a-idempotency-check's checks)
// against the chi server: everything it claims holds, on every interface its card
// lists.
func TestChecker(t *testing.T) {
	srv := examplerun.Start(t, run, "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-delay", "300ms")
	rep, err := servercheck.Run(context.Background(), srv.URL, servercheck.Options{AgentDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if !rep.OK() || len(rep.Interfaces) < 3 {
		t.Fatalf("verdict %s on %d interfaces, want pass on JSON-RPC, HTTP+JSON and HTTP+JSON with a tenant", rep.Verdict, len(rep.Interfaces))
	}
	for _, iface := range rep.Interfaces {
		for _, id := range []string{"lost-answer", "concurrent", "stream-retry", "retry-during-run", "key-reuse"} {
			if r, _ := rep.Result(id, iface.String()); r.Status != servercheck.Pass {
				t.Errorf("%s on %s: %s (%s), want pass", id, iface, r.Status, r.Detail)
			}
		}
	}
}
