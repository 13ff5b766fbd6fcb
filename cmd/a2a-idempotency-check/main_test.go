package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/servercheck"
)

// runCommand runs the command with args and returns its exit status and output.
func runCommand(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	t.Logf("a2a-idempotency-check %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	return code, stdout.String() + stderr.String()
}

// The exit status says what the report says: 0 when everything claimed holds, 3 for
// a card without the extension, 1 when a check fails, 4 when checks could not run,
// 2 for bad flags or no card.
func TestExitStatus(t *testing.T) {
	kit := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{})})
	bare := testkit.NewServer(t, testkit.Config{})
	liar := testkit.NewServer(t, testkit.Config{Extensions: []a2a.AgentExtension{{URI: idempotency.ExtensionURI}}})

	if code, out := runCommand(t, kit.URL); code != exitPass || !strings.Contains(out, "VERDICT: PASS") {
		t.Errorf("the kit: exit %d, want %d and a PASS verdict", code, exitPass)
	}
	if code, out := runCommand(t, bare.URL); code != exitNotAdvertised || !strings.Contains(out, "NOT ADVERTISED") {
		t.Errorf("bare a2a-go: exit %d, want %d and NOT ADVERTISED", code, exitNotAdvertised)
	}
	if code, out := runCommand(t, "-only", "replay,key-reuse", liar.URL); code != exitFail || !strings.Contains(out, "First failure: replay") {
		t.Errorf("a server advertising without deduplicating: exit %d, want %d and the first failure", code, exitFail)
	}
	if code, out := runCommand(t, "-max-requests", "5", kit.URL); code != exitIncomplete || !strings.Contains(out, "INCOMPLETE") {
		t.Errorf("a run out of requests: exit %d, want %d", code, exitIncomplete)
	}
	if code, _ := runCommand(t, "-force", "-only", "replay", bare.URL); code != exitFail {
		t.Errorf("-force on bare a2a-go: exit %d, want %d", code, exitFail)
	}
	bare.Close()
	if code, _ := runCommand(t, "-timeout", "5s", bare.URL); code != exitUsage {
		t.Errorf("a server that is gone: exit %d, want %d", code, exitUsage)
	}
	if code, _ := runCommand(t); code != exitUsage {
		t.Errorf("no URL: exit %d, want %d", code, exitUsage)
	}
	if code, _ := runCommand(t, "-no-such-flag", kit.URL); code != exitUsage {
		t.Errorf("a bad flag: exit %d, want %d", code, exitUsage)
	}
	if code, out := runCommand(t, "-list"); code != exitPass || !strings.Contains(out, "stream-retry") {
		t.Errorf("-list: exit %d, want %d and the checks", code, exitPass)
	}
}

// -json writes the whole report, for CI.
func TestJSON(t *testing.T) {
	kit := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Agent: &testkit.Agent{Delay: 100 * time.Millisecond}})
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-json", "-agent-delay", "100ms", kit.URL}, &stdout, &stderr); code != exitPass {
		t.Fatalf("exit %d, want %d:\n%s%s", code, exitPass, stdout.String(), stderr.String())
	}
	var rep servercheck.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("-json wrote no JSON report: %v\n%s", err, stdout.String())
	}
	if rep.Verdict != "pass" || !rep.Advertised || len(rep.Interfaces) != 2 || len(rep.Results) < 20 || rep.Requests == 0 {
		t.Errorf("report: verdict %q advertised %v, %d interfaces, %d results, %d requests", rep.Verdict, rep.Advertised, len(rep.Interfaces), len(rep.Results), rep.Requests)
	}
}

// TestHelpExitsZero: -h prints the usage and exits 0, as every command of the kit does.
func TestHelpExitsZero(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"-h"}, &out, &errOut); code != exitPass {
		t.Fatalf("-h exits %d, want 0", code)
	}
	if !strings.Contains(errOut.String(), "-max-requests") {
		t.Errorf("-h printed %q, want the usage", errOut.String())
	}
}

// A gRPC interface the card lists is named in the report as not checked, with the
// reason, in the table and in -json; it does not make the run incomplete.
func TestGRPCNotChecked(t *testing.T) {
	var base string
	kit := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: testkit.WithCard(func() string {
		return `{"name":"echo","version":"1","supportedInterfaces":[` +
			`{"url":"` + base + testkit.JSONRPCPath + `","protocolBinding":"JSONRPC","protocolVersion":"1.0"},` +
			`{"url":"127.0.0.1:50051","protocolBinding":"GRPC","protocolVersion":"1.0"}],` +
			`"capabilities":{"streaming":true,"extensions":[{"uri":"` + idempotency.ExtensionURI + `"}]}}`
	})})
	base = kit.URL
	code, out := runCommand(t, "-only", "replay,key-reuse", kit.URL)
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	if !regexp.MustCompile(`(?m)^interface\s+#2 GRPC\s+NOT CHECKED\s+.*gRPC is not checked`).MatchString(out) || !strings.Contains(out, "Not checked: GRPC 1.0 127.0.0.1:50051 (gRPC is not checked") {
		t.Errorf("the table does not name the gRPC interface as not checked, with the reason:\n%s", out)
	}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-json", "-only", "replay", kit.URL}, &stdout, &stderr); code != exitPass {
		t.Fatalf("-json: exit %d, want %d\n%s", code, exitPass, stderr.String())
	}
	var rep servercheck.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	r, ok := rep.Result("interface", "GRPC")
	if !ok || r.Status != servercheck.NotChecked || !strings.Contains(r.Detail, "gRPC") || r.Interface != "GRPC 1.0 127.0.0.1:50051" {
		t.Errorf("-json: the gRPC interface's result is %+v (found %v), want not checked with the reason", r, ok)
	}
	if rep.Verdict != "pass" || len(rep.Interfaces) != 2 {
		t.Errorf("-json: verdict %q, %d interfaces; want pass and both interfaces", rep.Verdict, len(rep.Interfaces))
	}
}
