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
// against the example server: everything it claims holds on its JSON-RPC, HTTP+JSON
// and tenant HTTP+JSON interfaces; its gRPC interface is reported as not checked.
// With -reply message, the retries get the first attempt's Message.
func TestChecker(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // checks that must pass on every interface
	}{
		{"task", []string{"-delay", "300ms"}, []string{"lost-answer", "concurrent", "stream-retry", "retry-during-run", "replay"}},
		{"message", []string{"-delay", "0", "-reply", "message"}, []string{"lost-answer", "concurrent", "message-replay"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-grpc", "127.0.0.1:0", "-store", filepath.Join(t.TempDir(), "idempotency.db")}, tc.args...)
			srv := examplerun.Start(t, run, args...)
			start := time.Now()
			rep, err := servercheck.Run(context.Background(), srv.URL, servercheck.Options{AgentDelay: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d requests in %v:\n%s", rep.Requests, time.Since(start).Round(time.Millisecond), rep)
			if !rep.OK() {
				t.Fatalf("verdict %s, want pass", rep.Verdict)
			}
			checked := 0
			for _, iface := range rep.Interfaces {
				if iface.Binding == servercheck.BindingGRPC {
					if r, _ := rep.Result("interface", iface.String()); r.Status != servercheck.NotChecked {
						t.Errorf("gRPC interface %s: %s, want not checked", iface, r.Status)
					}
					continue
				}
				checked++
				for _, id := range tc.want {
					if r, _ := rep.Result(id, iface.String()); r.Status != servercheck.Pass {
						t.Errorf("%s on %s: %s (%s), want pass", id, iface, r.Status, r.Detail)
					}
				}
			}
			if checked != 3 {
				t.Errorf("checked %d interfaces, want JSON-RPC, HTTP+JSON and HTTP+JSON with a tenant", checked)
			}
		})
	}
}
