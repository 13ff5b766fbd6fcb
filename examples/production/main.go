// Command production is examples/stdlib with what a production server adds around
// the kit, each in one marked place:
//
//   - PostgreSQL: -store (default $IDEMPOTENCY_STORE, where a DSN with a password
//     belongs) takes a postgres:// DSN as well as a SQLite file; replicas may share a
//     PostgreSQL database, a SQLite file is served by one process (SoleInstance).
//   - gRPC: the kit's grpcbinding in front of a2a-go's gRPC handler, on the same keys
//     and tasks, on a port of its own (-grpc; empty serves none).
//   - Sweeps: finished tasks, and then their keys, are deleted after -retention,
//     every -sweep (idempotency.SweepRunner over sqlstore/a2atasks).
//   - Metrics: the middleware's and the gRPC binding's outcomes in the Prometheus
//     text format (middleware/metrics) at /metrics on the debug listener.
//   - Timeouts: a client's headers, body (-read-timeout) and idle connection are
//     bounded; the in-flight lease (-lease) bounds how long a crashed send holds its
//     key; SIGINT and SIGTERM shut down gracefully.
//   - Debug listener: -debug-addr serves the process's expvars (memstats, cmdline)
//     and /metrics off the public listener, which serves only {"agent_runs": n}.
//
// Run it, then the demo client (go run ./examples/demo) against it:
//
//	go run ./examples/production -addr 127.0.0.1:0 -delay 5s -reply message
//	IDEMPOTENCY_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go run ./examples/production -debug-addr 127.0.0.1:6060
//
// The sidecar (cmd/a2a-idempotency-proxy) is the same in front of a server that is
// not written in Go.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	_ "github.com/lib/pq"           // PostgreSQL, for -store postgres://...
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)
	"google.golang.org/grpc"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/examples/internal/echo"
	"github.com/a2akit/idempotency/grpcbinding"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
	"github.com/a2akit/idempotency/redisstore"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) { // -h: exit 0
		fmt.Fprintln(os.Stderr, "production:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx ends and then shuts down gracefully. It prints
// the URLs it serves to stdout, and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("production", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := echo.AddFlags(fs) // -addr, -delay, -reply
	grpcAddr := fs.String("grpc", "127.0.0.1:50051", "`host:port` to serve the gRPC binding on; port 0 picks a free port, empty serves no gRPC")
	store := fs.String("store", envOr("IDEMPOTENCY_STORE", "idempotency.db"), "task and key store: a SQLite file `path`, or a postgres:// DSN; "+
		"default $IDEMPOTENCY_STORE, the place for a DSN with a password (any local user can read a command line)")
	keysURL := fs.String("keys", os.Getenv("IDEMPOTENCY_KEYS"), "key store: a redis:// or rediss:// `URL` (its query parameter prefix= sets the key prefix); "+
		"default $IDEMPOTENCY_KEYS; empty keeps the keys beside the tasks in -store")
	table := fs.String("table", sqlstore.DefaultTable, "key table `name` (in the SQLite file or the PostgreSQL database)")
	taskTable := fs.String("tasks", a2atasks.DefaultTable, "task table `name`, beside the key table")
	retention := fs.Duration("retention", 24*time.Hour, "how long finished tasks, and the keys that name them, are kept")
	sweep := fs.Duration("sweep", 10*time.Minute, "how often the retention sweep runs")
	lease := fs.Duration("lease", middleware.DefaultLease, "how long a claimed send may stay unbound before an identical retry takes it over")
	readTimeout := fs.Duration("read-timeout", time.Minute, "how long a client may take to send a request, body included")
	debugAddr := fs.String("debug-addr", "", "`host:port` of a second listener for the process's expvars (memstats, cmdline) and /metrics; "+
		"empty: none. Keep it off the public network")
	if err := fs.Parse(args); err != nil {
		return err
	}
	redactArgs(*store)
	redactArgs(*keysURL)
	agent, err := flags.Agent()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	// PostgreSQL or SQLite: the tasks and their keys side by side, in one database. A
	// key lives at least as long as the task it names (its TTL is at least the
	// retention), so that a retry never runs the agent again while the task is kept.
	db, err := sqlstore.Open(ctx, *store)
	if err != nil {
		return err
	}
	defer db.Close()
	keys, err := sqlstore.New(db, sqlstore.Options{Table: *table, TaskTable: *taskTable, TTL: max(*retention, idempotency.DefaultKeyMaxAge)})
	if err != nil {
		return err
	}
	// With -keys, the keys live in Redis (redisstore) instead, and expire there; a task
	// then binds its key right after its first save (adapter.NewBindingStore), since
	// the task and the key are in two stores.
	var index idempotency.KeyIndex = keys
	taskOpts := a2atasks.Options{Table: *taskTable, Keys: keys}
	stores := "tasks and keys in " + sqlstore.Describe(*store)
	if *keysURL != "" {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rkeys, err := redisstore.OpenURL(rctx, *keysURL, redisstore.Options{TTL: max(*retention, idempotency.DefaultKeyMaxAge)})
		cancel()
		if err != nil {
			return err
		}
		defer rkeys.Close()
		index, taskOpts.Keys = rkeys, nil
		stores = "tasks in " + sqlstore.Describe(*store) + ", keys in " + redisstore.Describe(*keysURL)
	}
	tasks, err := a2atasks.New(db, taskOpts)
	if err != nil {
		return err
	}
	if err := tasks.Migrate(ctx); err != nil {
		return fmt.Errorf("create the task and key tables: %w", err)
	}
	soleInstance := sqlstore.Scheme(*store) != "postgres" && sqlstore.Scheme(*store) != "postgresql"

	// Sweeps: finished tasks older than the retention, then the keys that named them.
	go idempotency.SweepRunner{Sweeper: tasks, Interval: *sweep, Logger: logger,
		Policy: idempotency.RetentionPolicy{TerminalTaskRetention: *retention}}.Run(ctx)

	ln, base, err := echo.Listen(flags.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var grpcLn net.Listener
	var grpcTarget string // host:port, as gRPC clients dial it
	if *grpcAddr != "" {
		if grpcLn, grpcTarget, err = echo.Listen(*grpcAddr); err != nil {
			return err
		}
		defer grpcLn.Close()
		grpcTarget = strings.TrimPrefix(grpcTarget, "http://")
	}

	// kit (1): the agent behind the adapter, as in examples/stdlib.
	aopts := adapter.Options{Logger: logger}
	var taskStore taskstore.Store = tasks
	if taskOpts.Keys == nil {
		taskStore = adapter.NewBindingStore(tasks, aopts)
	}
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, aopts),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, aopts)),
		a2asrv.WithTaskStore(taskStore),
		a2asrv.WithLogger(logger))

	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(echo.Card(base, grpcTarget)))
	mux.Handle(echo.JSONRPCPath, a2asrv.NewJSONRPCHandler(handler))
	mux.Handle(echo.RESTPath+"/", http.StripPrefix(echo.RESTPath, a2asrv.NewRESTHandler(handler)))
	mux.Handle(echo.TenantRESTPath+"/", http.StripPrefix(echo.TenantRESTPath, a2asrv.NewTenantRESTHandler("/{*}", handler)))
	mux.HandleFunc("GET "+echo.VarsPath, echo.ServeRuns)

	// kit (2): the middleware, as in examples/stdlib, with the lease, the store's
	// SoleInstance and the metrics collector.
	collector := metrics.New()
	taskReader := adapter.NewTaskReader(tasks, adapter.TaskReaderOptions{})
	idem, err := middleware.New(index, middleware.Options{
		Logger:       logger,
		Lease:        *lease,
		Tasks:        taskReader,
		SoleInstance: soleInstance,
		Observe:      collector.Observe,
	})
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "echo agent (%s), %s\n", flags, stores)
	// Debug listener: expvars and metrics, off the public listener.
	if *debugAddr != "" {
		dln, err := net.Listen("tcp", *debugAddr)
		if err != nil {
			return fmt.Errorf("debug listener: %w", err)
		}
		defer dln.Close()
		debug := http.NewServeMux()
		debug.Handle("/debug/vars", expvar.Handler())
		debug.Handle("/metrics", collector)
		go (&http.Server{Handler: debug, ReadHeaderTimeout: 10 * time.Second}).Serve(dln)
		fmt.Fprintf(stdout, "expvars (debug):   http://%s/debug/vars\n", dln.Addr())
		fmt.Fprintf(stdout, "metrics (debug):   http://%s/metrics\n", dln.Addr())
	}
	// gRPC: a2a-go's gRPC handler over the same request handler, with the kit's
	// interceptors on the same keys and tasks: a send made over JSON-RPC or HTTP+JSON
	// and retried over gRPC (or the other way round) runs once.
	if grpcLn != nil {
		kit, err := grpcbinding.New(keys, grpcbinding.Options{
			Logger:       logger,
			Lease:        *lease,
			Tasks:        taskReader,
			SoleInstance: soleInstance,
			Observe:      collector.Observe,
		})
		if err != nil {
			return err
		}
		gs := grpc.NewServer(kit.ServerOptions()...)
		a2agrpc.NewHandler(handler).RegisterWith(gs)
		go func() { _ = gs.Serve(grpcLn) }()
		defer stopGRPC(gs)
		fmt.Fprintf(stdout, "gRPC:              %s\n", grpcTarget)
	}
	echo.PrintURLs(stdout, base)
	// kit (3): the middleware in front of the whole mux, card included; timeouts and
	// the graceful shutdown in echo.Serve.
	return echo.Serve(ctx, ln, idem(mux), *readTimeout, logger)
}

// stopGRPC stops gs gracefully, waiting at most ten seconds for the calls in
// progress.
func stopGRPC(gs *grpc.Server) {
	stopped := make(chan struct{})
	go func() {
		gs.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		gs.Stop()
	}
}

// envOr returns the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// redactArgs hides the password of the DSN store in os.Args, which expvar publishes
// as cmdline (on -debug-addr only). The kernel's copy of the command line, which any
// local user can read, keeps it: pass such a DSN in IDEMPOTENCY_STORE.
func redactArgs(store string) {
	shown := strings.TrimPrefix(sqlstore.Describe(store), "PostgreSQL ")
	if shown == store || !strings.Contains(sqlstore.Describe(store), "PostgreSQL") {
		return
	}
	for i, a := range os.Args {
		os.Args[i] = strings.ReplaceAll(a, store, shown)
	}
}
