// Command a2a-idempotency-check checks, from outside, whether an A2A server keeps
// the promise its agent card makes when it lists the idempotency extension
// (https://a2a-rust.com/extensions/idempotency/v1): that a keyed send can be retried
// without running the agent twice.
//
//	a2a-idempotency-check http://127.0.0.1:8080
//	a2a-idempotency-check -json -agent-delay 2s https://agent.example.com > report.json
//
// It reads the card, reports whether the extension is advertised, and runs every
// check of package servercheck on every JSON-RPC and HTTP+JSON interface the card
// lists (a gRPC interface is named as not checked, with the reason): malformed keys,
// a lost first attempt and its retries, key reuse, concurrent sends, streaming
// retries, retries during a run, Message replays, unkeyed sends, the response
// headers, the Idempotency-Key header carrier when the server claims it, and retries
// through every other interface of the tenant. It prints a table, the
// verdict and the first failing exchange (or, with -json, the whole report).
//
// Exit status: 0 when everything the server claims holds; 1 when a check failed; 2
// when the card cannot be read or the flags are wrong; 3 when the card does not
// list the extension (nothing was checked; -force checks anyway); 4 when no check
// failed but some could not run (-timeout or -max-requests ran out, the server
// stopped answering).
//
// The checker sends at most -max-requests requests (about 36 per interface when
// nothing answers 409) and stops after -timeout. Every send carries a fresh random key and
// message id; the tasks it creates have texts beginning with -text.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/a2akit/idempotency/servercheck"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitPass          = 0
	exitFail          = 1
	exitUsage         = 2
	exitNotAdvertised = 3
	exitIncomplete    = 4
)

// headers is the repeatable -H flag.
type headers http.Header

func (h headers) String() string { return "" }

func (h headers) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return errors.New(`want "Name: value"`)
	}
	http.Header(h).Add(strings.TrimSpace(name), strings.TrimSpace(value))
	return nil
}

// run runs the command with args and returns its exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("a2a-idempotency-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: a2a-idempotency-check [flags] URL\n\nURL is the server's base URL (its card is at URL/.well-known/agent-card.json), or the card's URL.\n\n")
		fs.PrintDefaults()
	}
	var opts servercheck.Options
	asJSON := fs.Bool("json", false, "write the report as JSON (for CI) instead of a table")
	list := fs.Bool("list", false, "list the checks and exit")
	only := fs.String("only", "", "comma-separated `IDs` of the checks to run (default all; see -list)")
	hdr := headers{}
	fs.DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "bound on the whole run")
	fs.DurationVar(&opts.AgentDelay, "agent-delay", 0, "how long the agent usually takes to answer a send (a hint: the checker waits longer, and times its retries during a run by it)")
	fs.DurationVar(&opts.RequestTimeout, "request-timeout", 0, "bound on one request (default 15s plus twice -agent-delay)")
	fs.IntVar(&opts.Concurrency, "concurrency", 8, "number of identical sends of the concurrent check")
	fs.IntVar(&opts.MaxRequests, "max-requests", 300, "bound on the number of requests of the whole run")
	fs.StringVar(&opts.Text, "text", "idempotency check", "`text` that begins every message the checker sends")
	fs.BoolVar(&opts.Force, "force", false, "run the checks even when the card does not list the extension")
	fs.Var(hdr, "H", "`header` (\"Name: value\") added to every request, e.g. an Authorization header; repeatable")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitPass // -h asked for the usage, which went to stderr
	} else if err != nil {
		return exitUsage
	}
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, c := range servercheck.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Spec, c.Title)
		}
		tw.Flush()
		return exitPass
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	opts.Header = http.Header(hdr)
	rep, err := servercheck.Run(ctx, fs.Arg(0), opts)
	if err != nil {
		fmt.Fprintln(stderr, "a2a-idempotency-check:", err)
		return exitUsage
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "a2a-idempotency-check:", err)
		return exitUsage
	}
	switch {
	case rep.OK():
		return exitPass
	case !rep.Advertised && !opts.Force:
		return exitNotAdvertised
	case rep.Verdict == "incomplete":
		return exitIncomplete
	}
	return exitFail
}
