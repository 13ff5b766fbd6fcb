// Command demo shows, against a running example server, what an idempotency key is
// for. It sends a message without a key, gives up while the agent works (as if the
// connection had dropped) and sends it again: the agent runs twice. It does the same
// with a key: every retry gets the task the first attempt created, and the agent runs
// once. Then it reuses the key for a different message, which the server refuses, and
// lets keyedclient do the keying and retrying.
//
// Start a server, then the demo:
//
//	go run ./examples/stdlib
//	go run ./examples/demo
//	go run ./examples/demo -binding rest
//	go run ./examples/demo -url http://127.0.0.1:8081 -binding rest -tenant acme
//
// The server's agent must work longer than -cut (the servers' -delay defaults to 2s).
// The demo reads the agent's runs from the server's /debug/vars, so run it alone. It
// exits with status 1 when the server did not deduplicate the keyed sends.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2akit/idempotency/examples/internal/retrydemo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: exit 0
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := retrydemo.Options{Out: stdout}
	fs.StringVar(&opts.URL, "url", "http://127.0.0.1:8080", "base `URL` of a running example server")
	fs.StringVar(&opts.Binding, "binding", "jsonrpc", "A2A binding: jsonrpc or rest")
	fs.StringVar(&opts.Tenant, "tenant", "", "A2A tenant to send as (default none)")
	fs.DurationVar(&opts.Cut, "cut", retrydemo.DefaultCut, "how long the client waits for a first attempt before giving up")
	timeout := fs.Duration("timeout", time.Minute, "bound on the whole demonstration")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	rep, err := retrydemo.Run(ctx, opts)
	if err != nil {
		return err
	}
	if err := rep.Check(); err != nil {
		return fmt.Errorf("the server did not deduplicate the keyed sends:\n%w", err)
	}
	fmt.Fprintln(stdout, "\nthe keyed sends ran the agent once each, however often they were sent")
	return nil
}
