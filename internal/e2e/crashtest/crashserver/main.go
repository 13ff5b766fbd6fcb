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
	"net"
	"net/http"
	"os"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
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
	runs, err := os.OpenFile(*runsPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ix, err := testkit.Open(ctx, *store, *table, 16)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	agent := testkit.Echo(*delay)
	agent.OnRun = func(_ context.Context, ec *a2asrv.ExecutorContext) {
		// One write(2) of a short line on an O_APPEND file: whole, and in the page
		// cache (which outlives the process) before the agent goes on.
		if _, err := runs.Write([]byte(ec.Message.ID + "\n")); err != nil {
			logger.Error("recording a run", "error", err)
			os.Exit(3)
		}
	}
	srv, err := testkit.New(testkit.Config{Agent: agent,
		Index:      ix,
		Middleware: middleware.Options{Lease: *lease, ReplayWait: *replayWait, Logger: logger},
		BaseURL:    base,
		Logger:     logger,
	})
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", base)
	return (&http.Server{Handler: srv.Handler, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}
