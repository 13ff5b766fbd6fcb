// Command durableserver is the server of the restart and replica tests: an a2a-go
// echo server behind the kit (middleware, adapter, TaskReader) whose tasks and keys
// live in one SQLite file or one PostgreSQL database (package a2atasks beside
// sqlstore), with the retention sweep on a timer. It appends "<message id> <name>"
// to a file as each run of its agent starts, before the agent does anything, so that
// runs are counted across restarts and replicas; it names itself in the X-Replica
// header of every answer.
//
//	durableserver -db /tmp/kit.db -runs /tmp/runs.txt -name a
//	durableserver -db 'postgres://…?search_path=s1' -runs /tmp/runs.txt -name b
//
// A message whose text begins with "hold" makes the agent wait -hold before its first
// event (the key is then claimed, the task not stored); the agent works -work after
// reporting the task WORKING (or d for a text "wait <d> …"), then completes it. With
// -sole the server calls a2atasks' Restarted before it serves: what its predecessor
// left is ended at once. It prints "listening <base URL>" on
// its first line of standard output once it accepts connections, and serves until it
// is stopped.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "durableserver:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:0", "`host:port` to listen on")
	dsn := flag.String("db", "", "the database: a SQLite file `path` or a postgres:// DSN")
	runsPath := flag.String("runs", "", "`file` the agent appends \"<message id> <name>\" to as each run starts")
	name := flag.String("name", "server", "the `name` in X-Replica and in the run file")
	lease := flag.Duration("lease", 10*time.Second, "the middleware's lease")
	replayWait := flag.Duration("replay-wait", 500*time.Millisecond, "the middleware's ReplayWait")
	sole := flag.Bool("sole", false, "the only server on the database: a2atasks' Restarted before serving, and the middleware's SoleInstance")
	runLease := flag.Duration("run-lease", 2*time.Second, "a2atasks' run lease")
	work := flag.Duration("work", time.Second, "how long the agent works on a task")
	hold := flag.Duration("hold", time.Minute, "how long the agent waits before the first event of a message whose text begins with \"hold\"")
	retention := flag.Duration("retention", time.Hour, "terminal task retention (and the keys' time to live)")
	sweep := flag.Duration("sweep", time.Minute, "how often the retention sweep runs")
	flag.Parse()
	if *dsn == "" || *runsPath == "" {
		return fmt.Errorf("-db and -runs are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	onRun, err := testkit.RunFile(*runsPath, *name)
	if err != nil {
		return err
	}
	ctx := context.Background()
	_, keys, tasks, err := testdb.OpenTaskStores(ctx, *dsn, *retention, *runLease, *sole, logger)
	if err != nil {
		return err
	}
	go sweepEvery(ctx, tasks, *sweep, idempotency.RetentionPolicy{TerminalTaskRetention: *retention}, logger)

	agent := &testkit.Agent{Delay: *work, WaitWord: true}
	agent.OnRun = func(ctx context.Context, ec *a2asrv.ExecutorContext) {
		onRun(ctx, ec)
		if len(ec.Message.Parts) > 0 && strings.HasPrefix(ec.Message.Parts[0].Text(), "hold") {
			select { // before the first event: the key is bound, the task not stored
			case <-time.After(*hold):
			case <-ctx.Done():
			}
		}
	}
	return testkit.ServeCommand(*addr, testkit.Config{
		Agent:      agent,
		Index:      keys,
		TaskStore:  tasks,
		TaskReader: true,
		Middleware: middleware.Options{Lease: *lease, ReplayWait: *replayWait, SoleInstance: *sole, Logger: logger},
		Logger:     logger,
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Replica", *name)
				next.ServeHTTP(w, r)
			})
		},
	})
}

// sweepEvery runs the retention sweep over tasks and keys every interval.
func sweepEvery(ctx context.Context, tasks *a2atasks.Store, every time.Duration, policy idempotency.RetentionPolicy, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		rep, err := tasks.PurgeExpired(ctx, policy)
		if err != nil {
			log.Warn("retention sweep failed", "error", err)
			continue
		}
		log.Info("retention sweep", "report", rep)
	}
}
