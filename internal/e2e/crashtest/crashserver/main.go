// Command crashserver is the server the crash test kills: an a2a-go echo server
// behind the kit (middleware and adapter) on a SQLite file or a PostgreSQL database,
// which appends the message id of every run of its agent to a file before the agent
// does anything, so that the runs of a process killed with SIGKILL are still counted.
//
//	crashserver -store /tmp/keys.db -runs /tmp/runs.txt -lease 1s
//
// It prints "listening <base URL>" on its first line of standard output once it
// accepts connections, and serves until it is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

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
	store := flag.String("store", "", "key index: a SQLite file `path` or a postgres:// DSN")
	table := flag.String("table", "", "key table `name` (default sqlstore's)")
	runsPath := flag.String("runs", "", "`file` the agent appends the message id of each run to")
	lease := flag.Duration("lease", time.Second, "the middleware's lease")
	replayWait := flag.Duration("replay-wait", 200*time.Millisecond, "the middleware's ReplayWait")
	delay := flag.Duration("delay", 30*time.Millisecond, "the longest the agent works on a task")
	flag.Parse()
	if *store == "" || *runsPath == "" {
		return fmt.Errorf("-store and -runs are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	onRun, err := testkit.RunFile(*runsPath, "")
	if err != nil {
		return err
	}
	ix, err := testdb.Open(context.Background(), *store, *table, 16)
	if err != nil {
		return err
	}
	agent := testkit.Echo(*delay)
	agent.OnRun = onRun
	return testkit.ServeCommand(*addr, func(base string) (http.Handler, error) {
		srv, err := testkit.New(testkit.Config{Agent: agent,
			Index:      ix,
			Middleware: middleware.Options{Lease: *lease, ReplayWait: *replayWait, Logger: logger},
			BaseURL:    base,
			Logger:     logger,
		})
		if err != nil {
			return nil, err
		}
		return srv.Handler, nil
	})
}
