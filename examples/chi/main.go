// Command chi is the echo agent of examples/stdlib served on chi v5 routes, with the
// idempotency kit installed the chi way: r.Use(idem).
//
// It serves the JSON-RPC binding at /jsonrpc, HTTP+JSON at /rest and, with a tenant
// path segment, at /tenants/{tenant} (a2asrv.NewTenantRESTHandler), the agent card at
// /.well-known/agent-card.json and the agent's run count (agent_runs) at /debug/vars.
// The flags are those of examples/stdlib:
//
//	go run ./examples/chi -addr 127.0.0.1:8081
//	go run ./examples/demo -url http://127.0.0.1:8081 -binding rest -tenant acme
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
	"github.com/go-chi/chi/v5"
	chimiddleware "github.com/go-chi/chi/v5/middleware"

	"github.com/a2akit/idempotency/examples/internal/exampleserver"
	"github.com/a2akit/idempotency/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chi:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx ends and then shuts down gracefully. It prints
// the URLs it serves to stdout, and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	srv, err := exampleserver.Open(ctx, "chi", args, stderr)
	if err != nil {
		return err
	}
	defer srv.Close()
	// The kit's middleware, recording claims in the SQL index.
	idem, err := middleware.New(srv.Index, srv.Config.MiddlewareOptions(srv.Logger))
	if err != nil {
		return err
	}

	handler := srv.Handler
	r := chi.NewRouter()
	r.Use(chimiddleware.Recoverer)
	// The kit, like any other chi middleware. It runs before chi routes the request,
	// so it sees every send and the agent card, whatever route serves them.
	r.Use(idem)

	r.Method(http.MethodGet, a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(exampleserver.Card(srv.Base)))
	r.Handle(exampleserver.JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	// chi's Mount does not strip the prefix from the request path, and a2a-go's
	// HTTP+JSON handler routes on the whole path, so strip it.
	r.Mount(exampleserver.RESTPath, http.StripPrefix(exampleserver.RESTPath, a2asrv.NewRESTHandler(handler)))
	// /tenants/{tenant}/message:send, ...: a2a-go takes the tenant from the path
	// segment; its client sends it in the body too, where the middleware reads it
	// as the key's scope.
	r.Mount(exampleserver.TenantRESTPath, http.StripPrefix(exampleserver.TenantRESTPath,
		a2asrv.NewTenantRESTHandler("/{*}", handler)))
	r.Method(http.MethodGet, exampleserver.VarsPath, expvar.Handler())

	fmt.Fprintf(stdout, "echo agent on chi (-delay %v, -reply %s), keys in %s\n", srv.Config.Delay, srv.Config.Reply, exampleserver.StoreName(srv.Config.Store))
	exampleserver.PrintURLs(stdout, srv.Base)
	return srv.Serve(ctx, r)
}
