package main

import (
	"testing"

	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// The tests in this package start the server in-process and read the agent's runs
// from /debug/vars, which counts every run in the process: they must not run in
// parallel. examples/production runs the same demonstrations on PostgreSQL and gRPC.

func TestBadFlags(t *testing.T) { examplerun.CheckBadFlags(t, run) }
