package servercheck_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The package imports the standard library and the kit's root package only, so that
// any server's tests, and the command, can use it without inheriting a module.
func TestStandardLibraryOnly(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/a2akit/idempotency/servercheck").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != "github.com/a2akit/idempotency" && pkg != "github.com/a2akit/idempotency/servercheck" {
			t.Errorf("servercheck imports %s, outside the standard library and the kit's root package", pkg)
		}
	}
}
