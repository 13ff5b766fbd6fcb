//go:build cgo

package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"context"
	"github.com/a2akit/idempotency/internal/testkit"
)

// startProxy starts the sidecar (built from this checkout, in a process of its own)
// in front of upstream, its keys in a SQLite file, and returns its base URL.
func startProxy(t *testing.T, upstream string) string {
	t.Helper()
	bin := testkit.BuildCommand(t, "github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy")
	cmd := exec.Command(bin, "-upstream", upstream, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "WARN")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	var mu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("proxy log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening "); ok {
				u, _, _ := strings.Cut(rest, ",")
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not listen within 30s")
	}
	return ""
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

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
	proxy := startProxy(t, upstream.URL)
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
