//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// TestChecker runs the black-box checker (cmd/a2a-idempotency-check's checks)
// against the chi server: everything it claims holds, on every interface its card
// lists.
func TestChecker(t *testing.T) {
	srv := examplerun.Start(t, run, "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-delay", "300ms")
	examplerun.CheckChecker(t, srv, "lost-answer", "concurrent", "stream-retry", "retry-during-run", "key-reuse")
}
