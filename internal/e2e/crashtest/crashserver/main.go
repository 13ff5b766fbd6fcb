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
	"github.com/a2akit/idempotency/middleware"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crashserver:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "`host:port` to listen on")
	dsn := flag.String("db", "", "the database: a SQLite file `path` or a postgres:// DSN")
	runsPath := flag.String("runs", "", "`file` the agent appends a line to as each run starts")
	name := flag.String("name", "server", "the `name` of this process in the run file")
	lease := flag.Duration("lease", time.Second, "the middleware's lease")
	runLease := flag.Duration("run-lease", time.Second, "a2atasks' run lease")
	replayWait := flag.Duration("replay-wait", 200*time.Millisecond, "the middleware's ReplayWait")
	delay := flag.Duration("delay", 30*time.Millisecond, "the longest the agent works on a task")
	sole := flag.Bool("sole", false, "the only server on the database: end what its predecessor left at once")
	flag.Parse()
	if *dsn == "" || *runsPath == "" {
		return fmt.Errorf("-db and -runs are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runs, err := os.OpenFile(*runsPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	db, keys, tasks, err := testdb.OpenTaskStores(context.Background(), *dsn, 0, *runLease, *sole, logger)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(16)

	agent := &testkit.Agent{Delay: *delay, Jitter: true}
	agent.OnRun = func(_ context.Context, ec *a2asrv.ExecutorContext) {
		line := ec.Message.ID + " " + *name + " " + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
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
	return testkit.ServeCommand(*addr, testkit.Config{
		Agent:      agent,
		Index:      keys,
		TaskStore:  tasks,
		TaskReader: true,
		Middleware: middleware.Options{Lease: *lease, ReplayWait: *replayWait, SoleInstance: *sole, Logger: logger},
		Logger:     logger,
	})
}
