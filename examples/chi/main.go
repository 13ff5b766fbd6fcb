// Command chi is examples/stdlib on chi v5 routes: the same agent, store and kit,
// with the kit installed the chi way, r.Use(idem). Only the router differs; the
// kit's steps are marked "kit (1)" to "kit (3)" as there. The kit's package is called
// middleware, like chi's; this file imports it as idem, so chi's keeps its usual
// name.
//
//	go run ./examples/chi -addr 127.0.0.1:8081
//	go run ./examples/demo -url http://127.0.0.1:8081 -binding rest -tenant acme
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
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	_ "github.com/lib/pq"           // PostgreSQL, for -store postgres://...
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/examples/internal/echo"
	idem "github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: exit 0
		fmt.Fprintln(os.Stderr, "chi:", err)
		os.Exit(1)
	}
}

// run parses args and serves until ctx ends. It prints the URLs it serves to stdout,
// and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := echo.AddFlags(fs)
	store := fs.String("store", "idempotency.db", "where tasks and keys are kept: a SQLite file `path`, or a postgres:// URL")
	lease := fs.Duration("lease", idem.DefaultLease, "how long the key of a send whose server died stays held before an identical retry may run it")
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
	// kit (2): the middleware, recording claims in the SQL index and answering retries
	// from the task store. Its default scope is the tenant a2a-go routes by, the REST
	// path segment included (middleware.TenantRoutes). The server has no authentication, so the tasks' owner is a2a-go's
	// anonymous user, which is the TaskReader's default.
	keyed, err := idem.New(keys, idem.Options{
		Logger: logger,
		Lease:  *lease,
		Tasks:  adapter.NewTaskReader(tasks, adapter.TaskReaderOptions{}),
	})
	if err != nil {
		return err
	}

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	// kit (3): the kit, like any other chi middleware. It runs before chi routes the
	// request, so it sees every send and the agent card, whatever route serves them.
	r.Use(keyed)
	r.Method(http.MethodGet, a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(echo.Card(base, "")))
	r.Handle(echo.JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	// chi's Mount does not strip the prefix from the request path, and a2a-go's
	// HTTP+JSON handler routes on the whole path, so strip it.
	r.Mount(echo.RESTPath, http.StripPrefix(echo.RESTPath, a2asrv.NewRESTHandler(handler)))
	// /tenants/{tenant}/message:send, ...: a2a-go takes the tenant from the path
	// segment; its client sends it in the body too, where the middleware reads it
	// as the key's scope.
	r.Mount(echo.TenantRESTPath, http.StripPrefix(echo.TenantRESTPath, a2asrv.NewTenantRESTHandler("/{*}", handler)))
	r.Get(echo.VarsPath, echo.ServeRuns)

	fmt.Fprintf(stdout, "echo agent on chi (%s), tasks and keys in %s\n", flags, sqlstore.Describe(*store))
	echo.PrintURLs(stdout, base)
	return echo.Serve(ctx, ln, r, time.Minute, logger)
}
