package testkit

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartSidecar builds the sidecar (cmd/a2a-idempotency-proxy, from this checkout)
// and starts it in a process of its own in front of upstream, its keys in a SQLite
// file of tb, with args added to its flags; it returns the sidecar's base URL. The
// sidecar is killed when tb ends, and its log is written to tb when tb failed.
func StartSidecar(tb testing.TB, upstream string, args ...string) string {
	tb.Helper()
	bin := BuildCommand(tb, "github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy")
	cmd := exec.Command(bin, append([]string{"-upstream", upstream, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(tb.TempDir(), "keys.db"), "-log-level", "WARN"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	logs := &Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if tb.Failed() {
			tb.Logf("sidecar's log:\n%s", logs.String())
		}
	})
	urls := make(chan string, 1)
	go func() {
		// "a2a-idempotency-proxy: listening http://127.0.0.1:port, upstream …"
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
		tb.Fatal("the sidecar did not listen within 30s")
	}
	return ""
}
