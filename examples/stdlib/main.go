// Command stdlib is an A2A server built with the official Go SDK (a2a-go) on
// net/http's ServeMux, with the idempotency kit in front of it: a send that carries
// an idempotency key runs the agent once, however often the client retries it.
//
// It serves an echo agent on the JSON-RPC binding (/jsonrpc), on HTTP+JSON (/rest,
// and /tenants/{tenant} with a tenant path segment) and its agent card at
// /.well-known/agent-card.json, and counts the agent's runs in the expvar agent_runs
// at /debug/vars. Keys are kept in a SQLite file in the working directory, or in
// PostgreSQL when -store is a postgres:// DSN.
//
//	go run ./examples/stdlib
//	go run ./examples/stdlib -addr 127.0.0.1:0 -delay 5s -reply message
//	go run ./examples/stdlib -store 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// Then run the demo client against it: go run ./examples/demo. It stops on SIGINT or
// SIGTERM, after the requests in progress have finished.
package main

import (
	"context"
	"expvar"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/examples/internal/exampleserver"
	"github.com/a2akit/idempotency/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "stdlib:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx ends and then shuts down gracefully. It prints
// the URLs it serves to stdout, and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	srv, err := exampleserver.Open(ctx, "stdlib", args, stderr)
	if err != nil {
		return err
	}
	defer srv.Close()
	// The kit's middleware, recording claims in the SQL index.
	idem, err := middleware.New(srv.Index, srv.Config.MiddlewareOptions(srv.Logger))
	if err != nil {
		return err
	}

	// The A2A server, as it would be without the kit: a2a-go's transports on a mux.
	// srv.Handler runs the agent behind the kit's adapter (exampleserver.NewRequestHandler).
	handler := srv.Handler
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(exampleserver.Card(srv.Base)))
	mux.Handle(exampleserver.JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle(exampleserver.RESTPath+"/", http.StripPrefix(exampleserver.RESTPath, a2asrv.NewRESTHandler(handler)))
	mux.Handle(exampleserver.TenantRESTPath+"/", http.StripPrefix(exampleserver.TenantRESTPath,
		a2asrv.NewTenantRESTHandler("/{*}", handler)))
	mux.Handle("GET "+exampleserver.VarsPath, expvar.Handler())

	fmt.Fprintf(stdout, "echo agent (-delay %v, -reply %s), keys in %s\n", srv.Config.Delay, srv.Config.Reply, exampleserver.StoreName(srv.Config.Store))
	exampleserver.PrintURLs(stdout, srv.Base)
	// The middleware goes in front of the whole mux, card included, so that it sees
	// every send and declares the extension on the card it serves.
	return srv.Serve(ctx, idem(mux))
}
