//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/internal/testkit/examplerun"
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
			examplerun.CheckChecker(t, examplerun.Start(t, run, args...), tc.want...)
		})
	}
}
