package testkit

import (
	"os/exec"
	"path/filepath"
	"testing"
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
	return StartProcess(tb, cmd, nil).URL
}
