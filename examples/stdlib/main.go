// Command stdlib is the smallest complete A2A server with the idempotency kit: an
// agent built with the official Go SDK (a2a-go) on net/http's ServeMux, with the kit
// in front of it, so that a send that carries an idempotency key runs the agent once,
// however often the client retries it. The kit's steps are marked "kit (1)" to
// "kit (3)"; the rest is the server as it would be without the kit.
//
// It keeps its tasks and their keys side by side in one database, a SQLite file
// (-store, default idempotency.db) or PostgreSQL (-store postgres://...), so that,
// restarted, it answers retries of sends from before the restart with their tasks.
//
//	go run ./examples/stdlib
//	go run ./examples/stdlib -addr 127.0.0.1:0 -delay 5s -reply message
//
// Then run the demo client against it: go run ./examples/demo. examples/production
// adds what a production server needs (gRPC, sweeps, metrics, timeouts, a debug
// listener); examples/chi is this server on chi.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	_ "github.com/lib/pq"           // PostgreSQL, for -store postgres://...
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/examples/internal/echo"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: exit 0
		fmt.Fprintln(os.Stderr, "stdlib:", err)
		os.Exit(1)
	}
}

// run parses args and serves until ctx ends. It prints the URLs it serves to stdout,
// and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stdlib", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := echo.AddFlags(fs)
	store := fs.String("store", "idempotency.db", "where tasks and keys are kept: a SQLite file `path`, or a postgres:// URL")
	lease := fs.Duration("lease", middleware.DefaultLease, "how long the key of a send whose server died stays held before an identical retry may run it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	agent, err := flags.Agent()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	// The tasks (sqlstore/a2atasks) and their keys (sqlstore) side by side in one
	// database: see echo.OpenStores.
	keys, tasks, closeDB, err := echo.OpenStores(ctx, *store)
	if err != nil {
		return err
	}
	defer closeDB()

	// kit (1): the agent runs behind the adapter. adapter.Executor binds each keyed
	// send's key to its task before the agent runs, so that a retry during a long run
	// gets the task at once; adapter.FollowUpBinder binds follow-ups (messages that
	// name an existing task) before a2a-go touches the task.
	aopts := adapter.Options{Logger: logger}
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, aopts),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, aopts)),
		a2asrv.WithTaskStore(tasks),
		a2asrv.WithLogger(logger))

	ln, base, err := echo.Listen(flags.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(echo.Card(base, "")))
	mux.Handle(echo.JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle(echo.RESTPath+"/", http.StripPrefix(echo.RESTPath, a2asrv.NewRESTHandler(handler)))
	mux.Handle(echo.TenantRESTPath+"/", http.StripPrefix(echo.TenantRESTPath, a2asrv.NewTenantRESTHandler("/{*}", handler)))
	mux.HandleFunc("GET "+echo.VarsPath, echo.ServeRuns)

	// kit (2): the middleware, recording claims in the SQL index and answering retries
	// from the task store. Its default scope is the tenant a2a-go routes by, the REST
	// path segment included (middleware.TenantRoutes). The server has no authentication, so the tasks' owner is a2a-go's
	// anonymous user, which is the TaskReader's default.
	idem, err := middleware.New(keys, middleware.Options{
		Logger: logger,
		Lease:  *lease,
		Tasks:  adapter.NewTaskReader(tasks, adapter.TaskReaderOptions{}),
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "echo agent (%s), tasks and keys in %s\n", flags, sqlstore.Describe(*store))
	echo.PrintURLs(stdout, base)
	// kit (3): the middleware goes in front of the whole mux, card included, so that
	// it sees every send and declares the extension on the card it serves.
	return echo.Serve(ctx, ln, idem(mux), time.Minute, logger)
}
