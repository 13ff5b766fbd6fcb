// Command a2aload drives an A2A server that runs the idempotency kit with many
// concurrent keyed sends, and checks from the agent's own run counter that every key
// ran the agent at most once (exactly once when every key was answered), that every
// answer for one key names the same task, and that conflicting sends are refused as
// "already held". It prints a summary and exits with status 1 on a violation, 2 when
// it cannot run.
//
// Start the example server with a short agent delay, then point a2aload at it:
//
//	go run ./examples/stdlib -addr 127.0.0.1:8080 -delay 10ms -store /tmp/keys.db
//	go run ./internal/e2e/cmd/a2aload -url http://127.0.0.1:8080 -clients 64 -requests 20000 -duration 1m
//	go run ./internal/e2e/cmd/a2aload -url http://127.0.0.1:8080 -burst   # SPEC §5: 100 keys × 64 identical sends
//
// The run counter is read from GET -vars (an expvar JSON object) under -runs-var, so
// the server must have no other clients while a2aload runs. A client that drops a send
// before the agent started leaves the key's claim pending until the server's lease
// ends; set -settle above the lease (or run the server with a short lease), or such
// keys are reported as unsettled (ran at most once, not proven exactly once).
//
// Every run is bounded: -requests and -duration bound the load phase, -settle the
// phase that resends unanswered keys.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/a2akit/idempotency/internal/e2e/loadtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs a2aload with args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("a2aload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg loadtest.Config
	fs.StringVar(&cfg.BaseURL, "url", "http://127.0.0.1:8080", "the server's base `URL`")
	fs.StringVar(&cfg.JSONRPCPath, "jsonrpc", "/jsonrpc", "`path` of the JSON-RPC endpoint")
	fs.StringVar(&cfg.RESTPath, "rest", "/rest", "`path` the HTTP+JSON binding is mounted at")
	fs.StringVar(&cfg.VarsPath, "vars", "/debug/vars", "`path` of the expvar JSON that holds the run counter")
	fs.StringVar(&cfg.RunsVar, "runs-var", "agent_runs", "`name` of the run counter")
	fs.StringVar(&cfg.MetricsPath, "metrics", "/metrics", "`path` of the middleware's metrics (middleware/metrics), checked against the answers when served")
	fs.IntVar(&cfg.Clients, "clients", 32, "concurrent clients")
	fs.IntVar(&cfg.Requests, "requests", 2000, "sends of the load phase, at most")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "length of the load phase, at most")
	fs.DurationVar(&cfg.Settle, "settle", 30*time.Second, "length of the phase that resends unanswered keys, at most")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", 30*time.Second, "timeout of each send")
	fs.Float64Var(&cfg.Duplicates, "dup", 0.4, "share of sends that repeat a recent key with its message")
	fs.Float64Var(&cfg.Conflicts, "conflict", 0.05, "share of sends that reuse a recent key with another message")
	fs.Float64Var(&cfg.Drops, "drop", 0.05, "share of sends the client abandons mid-request")
	fs.Float64Var(&cfg.Streaming, "stream", 0.5, "share of streaming sends")
	fs.Float64Var(&cfg.JSONRPC, "jsonrpc-share", 0.5, "share of sends on JSON-RPC (the others use HTTP+JSON)")
	fs.Float64Var(&cfg.Replies, "reply", 0, `share of new keys whose text starts with "reply"`)
	fs.BoolVar(&cfg.TolerateErrors, "tolerate-errors", false, "count unexpected refusals instead of failing on them")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the choices (0: random)")
	burst := fs.Bool("burst", false, "run SPEC §5's burst instead: -keys keys × -copies identical sends at once, per binding and mode")
	keys := fs.Int("keys", 100, "keys per binding and mode, with -burst")
	copies := fs.Int("copies", 64, "identical sends of each key started at once, with -burst")
	verbose := fs.Bool("v", false, "log progress to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "a2aload: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	for _, p := range []float64{cfg.Duplicates, cfg.Conflicts, cfg.Drops, cfg.Streaming, cfg.JSONRPC, cfg.Replies} {
		if p < 0 || p > 1 {
			fmt.Fprintln(stderr, "a2aload: shares must be between 0 and 1")
			return 2
		}
	}
	if cfg.Duplicates+cfg.Conflicts > 1 {
		fmt.Fprintln(stderr, "a2aload: -dup and -conflict add up to more than 1")
		return 2
	}
	// Zero shares mean none here; the library reads zero as its default.
	for _, p := range []*float64{&cfg.Duplicates, &cfg.Conflicts, &cfg.Drops, &cfg.Streaming, &cfg.JSONRPC} {
		if *p == 0 {
			*p = -1
		}
	}

	var rep *loadtest.Report
	var err error
	if *burst {
		rep, err = loadtest.Burst(ctx, loadtest.BurstConfig{BaseURL: cfg.BaseURL, JSONRPCPath: cfg.JSONRPCPath,
			RESTPath: cfg.RESTPath, VarsPath: cfg.VarsPath, RunsVar: cfg.RunsVar, Keys: *keys, Copies: *copies,
			Timeout: cfg.Duration + cfg.Settle})
	} else {
		rep, err = loadtest.Run(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(stderr, "a2aload:", err)
		return 2
	}
	rep.WriteTo(stdout)
	if !rep.OK() {
		return 1
	}
	return 0
}
