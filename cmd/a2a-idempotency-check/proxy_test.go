//go:build cgo

package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
)

// The sidecar in front of a real a2a-go server (without the adapter) passes, and the
// agent ran once for every keyed message the checker sent.
func TestSidecarPasses(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	agent := &testkit.Agent{Delay: 300 * time.Millisecond, OnRun: func(_ context.Context, ec *a2asrv.ExecutorContext) {
		mu.Lock()
		defer mu.Unlock()
		runs[ec.Message.Parts[0].Text()]++
	}}
	upstream := testkit.NewServer(t, testkit.Config{Agent: agent})
	proxy := testkit.StartSidecar(t, upstream.URL)
	if code, out := runCommand(t, "-agent-delay", "300ms", proxy); code != exitPass {
		t.Fatalf("the sidecar: exit %d, want %d\n%s", code, exitPass, out)
	}
	mu.Lock()
	defer mu.Unlock()
	for text, n := range runs {
		if n > 1 && !strings.Contains(text, "(unkeyed") && !strings.Contains(text, "(header-carrier") {
			t.Errorf("the agent ran %d times for the keyed message %q", n, text)
		}
	}
}
