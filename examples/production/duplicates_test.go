//go:build cgo

package main

import (
	"path/filepath"
	"testing"

	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// TestConcurrentDuplicates: 32 identical keyed sends at once run the agent once and
// all name its task, with the keys in the SQLite file and with the keys in Redis.
func TestConcurrentDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys func(t *testing.T) []string
	}{
		{"sqlite", func(*testing.T) []string { return nil }},
		{"redis", func(t *testing.T) []string { return []string{"-keys", redisKeys(t)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-grpc", "", "-store", filepath.Join(t.TempDir(), "idempotency.db"), "-delay", "500ms"}, tc.keys(t)...)
			examplerun.CheckConcurrentDuplicates(t, examplerun.Start(t, run, args...), 32)
		})
	}
}
