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
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "durableserver:", err)
		os.Exit(1)
	}
}

func run() error {
	var srv testdb.TaskServer
	srv.Flags(10*time.Second, 2*time.Second, 500*time.Millisecond)
	work := flag.Duration("work", time.Second, "how long the agent works on a task")
	hold := flag.Duration("hold", time.Minute, "how long the agent waits before the first event of a message whose text begins with \"hold\"")
	retention := flag.Duration("retention", time.Hour, "terminal task retention (and the keys' time to live)")
	sweep := flag.Duration("sweep", time.Minute, "how often the retention sweep runs")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx := context.Background()
	_, keys, tasks, err := srv.Open(ctx, *retention, logger)
	if err != nil {
		return err
	}
	onRun, err := testkit.RunFile(srv.Runs, srv.Name)
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
	cfg := srv.Config(agent, keys, tasks, logger)
	cfg.Wrap = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Replica", srv.Name)
			next.ServeHTTP(w, r)
		})
	}
	return testkit.ServeCommand(srv.Addr, cfg)
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
