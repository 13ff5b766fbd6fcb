// Command chi is the echo agent of examples/stdlib served on chi v5 routes, with the
// idempotency kit installed the chi way: r.Use(idem).
//
// It serves the JSON-RPC binding at /jsonrpc, HTTP+JSON at /rest and, with a tenant
// path segment, at /tenants/{tenant} (a2asrv.NewTenantRESTHandler), the agent card at
// /.well-known/agent-card.json and the agent's run count (agent_runs, nothing else of
// the process) at /debug/vars; the process's expvars only on -debug-addr. The flags
// are those of examples/stdlib, but -grpc (it serves no gRPC binding):
//
//	go run ./examples/chi -addr 127.0.0.1:8081
//	go run ./examples/demo -url http://127.0.0.1:8081 -binding rest -tenant acme
//
// This file is the whole server: copy it into your own module to start from it. The
// kit's three steps are marked "kit (1)", "kit (2)" and "kit (3)". Its package is
// called middleware, like chi's; this file imports it as idem, so chi's keeps its
// usual name.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"           // PostgreSQL, for -store postgres://...
	_ "github.com/mattn/go-sqlite3" // SQLite, the default store (needs cgo)

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	idem "github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/redisstore"
	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "chi:", err)
		os.Exit(1)
	}
}

// Where the server mounts the A2A bindings; the agent card lists them.
const (
	jsonrpcPath    = "/jsonrpc"
	restPath       = "/rest"    // POST /rest/message:send, ...
	tenantRESTPath = "/tenants" // POST /tenants/{tenant}/message:send, ...
	varsPath       = "/debug/vars"
)

// run parses args, serves until ctx ends and then shuts down gracefully. It prints
// the URLs it serves to stdout, and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free port")
	store := fs.String("store", envOr("IDEMPOTENCY_STORE", "idempotency.db"), "task and key store: a SQLite file `path`, or a postgres:// DSN; "+
		"default $IDEMPOTENCY_STORE, the place for a DSN with a password (any local user can read a command line)")
	keysURL := fs.String("keys", os.Getenv("IDEMPOTENCY_KEYS"), "key store: a redis:// or rediss:// `URL` (its query parameter prefix= sets the key prefix); "+
		"default $IDEMPOTENCY_KEYS; empty keeps the keys beside the tasks in -store")
	table := fs.String("table", sqlstore.DefaultTable, "key table `name` (in the SQLite file or the PostgreSQL database)")
	taskTable := fs.String("tasks", a2atasks.DefaultTable, "task table `name`, beside the key table")
	retention := fs.Duration("retention", 24*time.Hour, "how long finished tasks, and the keys that name them, are kept")
	sweep := fs.Duration("sweep", 10*time.Minute, "how often the retention sweep runs")
	delay := fs.Duration("delay", 2*time.Second, "how long the agent works before it completes")
	reply := fs.String("reply", "task", "what the agent answers with: task or message")
	lease := fs.Duration("lease", idem.DefaultLease, "how long a claimed send may stay unbound before an identical retry takes it over")
	readTimeout := fs.Duration("read-timeout", time.Minute, "how long a client may take to send a request, body included")
	debugAddr := fs.String("debug-addr", "", "`host:port` of a second listener for the process's expvars (memstats, cmdline); "+
		"empty: none. Keep it off the public network")
	if err := fs.Parse(args); err != nil {
		return err
	}
	redactArgs(*store)
	redactArgs(*keysURL)
	if *reply != "task" && *reply != "message" {
		return fmt.Errorf("-reply %q: want task or message", *reply)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))

	keys, tasks, closeStores, err := openStores(ctx, *store, *table, *taskTable, *retention)
	if err != nil {
		return err
	}
	defer closeStores()
	// The middleware's index: the SQL key table beside the tasks, or Redis.
	var index idempotency.KeyIndex = keys
	stores := "tasks and keys in " + storeName(*store)
	if *keysURL != "" {
		rkeys, err := openRedisKeys(ctx, *keysURL, *retention)
		if err != nil {
			return err
		}
		defer rkeys.Close()
		index, stores = rkeys, "tasks in "+storeName(*store)+", keys in "+storeName(*keysURL)
	}
	go sweepEvery(ctx, tasks, *sweep, idempotency.RetentionPolicy{TerminalTaskRetention: *retention}, logger)
	ln, base, err := listen(*addr)
	if err != nil {
		return err
	}
	defer ln.Close()

	// kit (1): the agent runs behind the adapter. adapter.Executor binds each keyed
	// send's key to its task before the agent runs, so that a retry during a long run
	// gets the task at once; adapter.FollowUpBinder binds follow-ups (messages that
	// name an existing task) before a2a-go touches the task.
	agent := &echoAgent{delay: *delay, replyMessage: *reply == "message"}
	aopts := adapter.Options{Logger: logger}
	handler := a2asrv.NewHandler(adapter.NewExecutor(agent, aopts),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, aopts)),
		a2asrv.WithTaskStore(tasks),
		a2asrv.WithLogger(logger))

	// kit (2): the middleware, recording claims in the SQL index and answering retries
	// from the task store. Its scope is the tenant a2a-go sees, the REST path segment
	// included. The server has no authentication, so the tasks' owner is a2a-go's
	// anonymous user, which is the TaskReader's default. A SQLite file is served by
	// this process alone (SoleInstance: a key whose task this process does not run
	// is not run anywhere); replicas may share a PostgreSQL database.
	keyed, err := idem.New(index, idem.Options{
		Logger:       logger,
		Lease:        *lease,
		Scope:        idem.TenantPathScope(tenantRESTPath),
		Tasks:        adapter.NewTaskReader(tasks, adapter.TaskReaderOptions{}),
		SoleInstance: !isPostgres(*store),
	})
	if err != nil {
		return err
	}

	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	// kit (3): the kit, like any other chi middleware. It runs before chi routes the
	// request, so it sees every send and the agent card, whatever route serves them.
	r.Use(keyed)

	r.Method(http.MethodGet, a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card(base)))
	r.Handle(jsonrpcPath, a2asrv.NewJSONRPCHandler(handler))
	// chi's Mount does not strip the prefix from the request path, and a2a-go's
	// HTTP+JSON handler routes on the whole path, so strip it.
	r.Mount(restPath, http.StripPrefix(restPath, a2asrv.NewRESTHandler(handler)))
	// /tenants/{tenant}/message:send, ...: a2a-go takes the tenant from the path
	// segment; its client sends it in the body too, where the middleware reads it
	// as the key's scope.
	r.Mount(tenantRESTPath, http.StripPrefix(tenantRESTPath, a2asrv.NewTenantRESTHandler("/{*}", handler)))
	r.Get(varsPath, serveRuns)

	fmt.Fprintf(stdout, "echo agent on chi (-delay %v, -reply %s), %s\n", *delay, *reply, stores)
	fmt.Fprintf(stdout, "agent card:        %s%s\n", base, a2asrv.WellKnownAgentCardPath)
	fmt.Fprintf(stdout, "JSON-RPC:          %s%s\n", base, jsonrpcPath)
	fmt.Fprintf(stdout, "HTTP+JSON:         %s%s\n", base, restPath)
	fmt.Fprintf(stdout, "HTTP+JSON, tenant: %s%s/{tenant}\n", base, tenantRESTPath)
	if *debugAddr != "" {
		dln, err := net.Listen("tcp", *debugAddr)
		if err != nil {
			return fmt.Errorf("debug listener: %w", err)
		}
		defer dln.Close()
		go (&http.Server{Handler: expvar.Handler(), ReadHeaderTimeout: 10 * time.Second}).Serve(dln)
		fmt.Fprintf(stdout, "expvars (debug):   http://%s\n", dln.Addr())
	}
	fmt.Fprintf(stdout, "agent_runs:        %s%s\n", base, varsPath)
	return serve(ctx, ln, r, *readTimeout, logger)
}

// openStores opens the task store and the key index in the database store names: a
// PostgreSQL database for a postgres:// (or postgresql://) DSN, otherwise a SQLite
// file at that path, created if it does not exist, with the connection parameters
// sqlstore's documentation asks for. It creates the tables if needed. A key lives at
// least as long as the task it names (its TTL is at least the retention), so that a retry never runs
// the agent again while the task is kept. Call the close function after the server
// has stopped.
func openStores(ctx context.Context, store, table, taskTable string, retention time.Duration) (*sqlstore.Store, *a2atasks.Store, func() error, error) {
	driver, dsn := "sqlite3", "file:"+store+"?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"
	if isPostgres(store) {
		driver, dsn = "postgres", store
	}
	db, err := sqlx.Open(driver, dsn)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open %s store: %w", driver, err)
	}
	fail := func(err error) (*sqlstore.Store, *a2atasks.Store, func() error, error) {
		db.Close()
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		return fail(fmt.Errorf("connect to the %s store: %w", driver, err))
	}
	keys, err := sqlstore.New(db, sqlstore.Options{Table: table, TaskTable: taskTable, TTL: max(retention, idempotency.DefaultKeyMaxAge)})
	if err != nil {
		return fail(err)
	}
	tasks, err := a2atasks.New(db, a2atasks.Options{Table: taskTable, Keys: keys})
	if err != nil {
		return fail(err)
	}
	if err := tasks.Migrate(ctx); err != nil {
		return fail(fmt.Errorf("create the task and key tables: %w", err))
	}
	return keys, tasks, db.Close, nil
}

// openRedisKeys opens the key index on the Redis or Valkey server rawURL names. Its
// keys live at least as long as the tasks they name, as in openStores; Redis deletes
// them then.
func openRedisKeys(ctx context.Context, rawURL string, retention time.Duration) (*redisstore.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return redisstore.OpenURL(ctx, rawURL, redisstore.Options{TTL: max(retention, idempotency.DefaultKeyMaxAge)})
}

// sweepEvery runs the retention sweep over the tasks and the keys every interval
// until ctx ends: it deletes the finished tasks older than the policy's retention,
// then the keys older than that whose task is gone.
func sweepEvery(ctx context.Context, tasks *a2atasks.Store, every time.Duration, policy idempotency.RetentionPolicy, logger *slog.Logger) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		rep, err := tasks.PurgeExpired(ctx, policy)
		if err != nil {
			logger.Warn("retention sweep failed", "error", err)
			continue
		}
		logger.Info("retention sweep", "tasks_deleted", rep.TasksDeleted, "keys_deleted", rep.KeysDeleted)
	}
}

func isPostgres(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

func isRedis(store string) bool {
	return strings.HasPrefix(store, "redis://") || strings.HasPrefix(store, "rediss://")
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
	if shown := storeName(store); (isPostgres(store) || isRedis(store)) && !strings.HasSuffix(shown, store) {
		_, redacted, _ := strings.Cut(shown, " ")
		for i, a := range os.Args {
			os.Args[i] = strings.ReplaceAll(a, store, redacted)
		}
	}
}

// serveRuns serves the agent's run count, and nothing else of the process, as the
// JSON object {"agent_runs": n} (the demo client reads it).
func serveRuns(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, "{%q: %d}\n", "agent_runs", runs.Value())
}

// storeName describes store for the banner, hiding the password a DSN may carry.
func storeName(store string) string {
	kind := "PostgreSQL"
	switch {
	case isRedis(store):
		kind = "Redis"
	case !isPostgres(store):
		return "SQLite file " + store
	}
	if u, err := url.Parse(store); err == nil {
		return kind + " " + u.Redacted()
	}
	return kind
}

// listen listens on addr and returns the base URL clients reach it at, with the port
// the system picked for port 0, and localhost for all interfaces.
func listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return ln, "http://" + net.JoinHostPort(host, port), nil
}

// serve serves h on ln until ctx ends, then shuts down gracefully: it stops accepting
// connections and waits at most ten seconds for the requests in progress.
//
// The timeouts bound what a client that stalls can hold: its headers for ten seconds,
// its whole request for readTimeout, an idle keep-alive connection for two minutes.
// There is no write timeout: a stream, or a blocking send of a long task, may last
// minutes.
func serve(ctx context.Context, ln net.Listener, h http.Handler, readTimeout time.Duration, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       readTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// card is the agent card of the server at base. It does not declare the idempotency
// extension: the middleware adds it to the card it serves, and only when its index
// can honour keys. (A server that signs its card declares it with
// adapter.DeclareExtension before signing.)
func card(base string) *a2a.AgentCard {
	tenant := a2a.NewAgentInterface(base+tenantRESTPath, a2a.TransportProtocolHTTPJSON)
	tenant.Tenant = "demo" // the tenant routes accept any tenant; the card names one
	return &a2a.AgentCard{
		Name:        "Echo",
		Description: "Echoes each message back after working for a while. Sends that carry an idempotency key run once.",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+jsonrpcPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+restPath, a2a.TransportProtocolHTTPJSON),
			tenant,
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "Echoes the text of the message.", Tags: []string{"echo"}}},
	}
}

// runs counts the agent's runs in this process, served at /debug/vars by serveRuns.
var runs = expvar.NewInt("agent_runs")

// echoAgent echoes the text of each message after working for delay: it creates a
// task (SUBMITTED, WORKING, an artifact "echo: <text>", COMPLETED), or, with
// replyMessage, answers a new message with a Message "echo: <text>".
type echoAgent struct {
	delay        time.Duration
	replyMessage bool
}

func (a *echoAgent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		runs.Add(1)
		echo := a2a.NewTextPart("echo: " + textOf(ec.Message))
		if ec.StoredTask == nil && a.replyMessage {
			if err := work(ctx, a.delay); err != nil {
				yield(nil, err)
				return
			}
			reply := a2a.NewMessage(a2a.MessageRoleAgent, echo)
			reply.ContextID = ec.ContextID
			yield(reply, nil)
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if err := work(ctx, a.delay); err != nil {
			yield(nil, err)
			return
		}
		if yield(a2a.NewArtifactEvent(ec, echo), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (a *echoAgent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// work stands for the agent's work: it waits for d, or until ctx ends. a2a-go runs
// the agent on a context detached from the request, so a client that goes away does
// not stop it.
func work(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// textOf joins the text parts of msg.
func textOf(msg *a2a.Message) string {
	var texts []string
	if msg != nil {
		for _, p := range msg.Parts {
			if t := p.Text(); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, " ")
}
