// Command crashserver is the server the crash test kills: an a2a-go echo server
// behind the kit (middleware, adapter, TaskReader) whose tasks and keys live in one
// SQLite file or one PostgreSQL database (package a2atasks beside sqlstore), which
// appends a line for every run of its agent to a file before the agent does
// anything, so that the runs of a process killed with SIGKILL are still counted.
//
//	crashserver -db /tmp/kit.db -runs /tmp/runs.txt -name 3 -lease 1s -run-lease 1s
//
// A run line is "<message id> <name> <start, ns since the Unix epoch>". The agent
// waits a random time up to -delay/2 before its first event (the key is then
// claimed, the task not stored), reports the task WORKING, works a random time up to
// -delay and completes it. With -sole the server calls a2atasks' Restarted before it
// serves, and the middleware runs as the sole instance. It prints "listening <base
// URL>" on its first line of standard output once it accepts connections, and
// serves until it is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crashserver:", err)
		os.Exit(1)
	}
}

func run() error {
	var srv testdb.TaskServer
	srv.Flags(time.Second, time.Second, 200*time.Millisecond)
	delay := flag.Duration("delay", 30*time.Millisecond, "the longest the agent works on a task")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, keys, tasks, err := srv.Open(context.Background(), 0, logger)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(16)
	runs, err := os.OpenFile(srv.Runs, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}

	agent := &testkit.Agent{Delay: *delay, Jitter: true}
	agent.OnRun = func(_ context.Context, ec *a2asrv.ExecutorContext) {
		line := ec.Message.ID + " " + srv.Name + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
		if _, err := runs.WriteString(line); err != nil {
			fmt.Fprintln(os.Stderr, "recording a run:", err)
			os.Exit(3)
		}
	}
	agent.Script = func(ctx context.Context, _ *a2asrv.ExecutorContext, _ string, _ int64) (a2a.Event, error) {
		// Before the first event: the key is claimed, the task not stored.
		select {
		case <-time.After(rand.N(*delay/2 + 1)):
		case <-ctx.Done():
		}
		return nil, nil
	}
	return testkit.ServeCommand(srv.Addr, srv.Config(agent, keys, tasks, logger))
}
