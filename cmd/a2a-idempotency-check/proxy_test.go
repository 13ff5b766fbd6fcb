//go:build cgo

package main

import (
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
)

// The sidecar in front of a real a2a-go server (without the adapter) passes, and the
// agent ran once for every keyed message the checker sent.
func TestSidecarPasses(t *testing.T) {
	var runs testkit.CheckerRuns
	agent := &testkit.Agent{Delay: 300 * time.Millisecond, OnRun: runs.OnRun}
	upstream := testkit.NewServer(t, testkit.Config{Agent: agent})
	proxy := testkit.StartSidecar(t, upstream.URL)
	if code, out := runCommand(t, "-agent-delay", "300ms", proxy); code != exitPass {
		t.Fatalf("the sidecar: exit %d, want %d\n%s", code, exitPass, out)
	}
	runs.KeyedOnce(t)
}
