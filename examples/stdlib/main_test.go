package main

import (
	"context"
	"io"
	"testing"
)

// The tests in this package start the server in-process and read the agent's runs
// from /debug/vars, which counts every run in the process: they must not run in
// parallel. examples/production runs the same demonstrations on PostgreSQL and gRPC.

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-reply", "task-or-message"},
		{"-no-such-flag"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}
