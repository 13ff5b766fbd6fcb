// Command a2a-idempotency-proxy puts the idempotency kit in front of any A2A server
// over HTTP, whatever its language: a sidecar that claims keyed sends in a SQLite or
// PostgreSQL key store and passes every request on to the server.
//
//	go run ./cmd/a2a-idempotency-proxy -upstream http://127.0.0.1:8080
//
// Clients talk to the proxy (-listen, default 127.0.0.1:8090) instead of the server
// (-upstream). The proxy serves the server's agent card with the idempotency
// extension added to capabilities.extensions and the card's interface URLs rewritten
// to -public-url (by default http:// and the Host the card was asked for), editing
// the card's bytes, so clients that read the card keep coming through the proxy; a
// signed card is served as it is. Every other request is passed on as it is, headers
// and status kept, streams flushed event by event. Keyed sends go through the kit's
// middleware: one run per key, and a retry gets the first attempt's task (see the
// middleware package, "Servers the kit cannot see inside"). The proxy reads the card
// through the middleware before it serves and every minute, so that the middleware
// knows whether the server streams (-early-bind auto): then a keyed blocking send is
// forwarded as a streaming send, its key bound at the first event, and answered in
// the unary shape when the run ends.
//
// Keys live in -store: a SQLite file (default idempotency-proxy.db, created if
// missing), or a postgres:// DSN. The DSN may come from the environment variable
// A2A_IDEMPOTENCY_PROXY_STORE instead, so that a password does not show in the
// process list; the flag wins when both are set. Several proxies in front of one
// server (or its replicas) share keys through one PostgreSQL database.
//
// An admin listener (-admin, default 127.0.0.1:8091; empty turns it off) serves
// GET /healthz (200 when the key store answers, 503 when not: a readiness check),
// GET /livez (200 while the process serves) and GET /metrics (the middleware's
// outcomes and the time it spent, as package middleware/metrics serves them, then
// upstream errors and retention sweeps, in Prometheus text format). It is
// a separate listener so that these stay off the public port.
//
// SIGINT or SIGTERM stops the proxy gracefully: it stops accepting, lets requests in
// flight finish for up to -shutdown-timeout, then closes what is left. Keys older
// than -key-max-age are swept every -sweep-interval.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
)

// earlyBindModes are the values of -early-bind.
var earlyBindModes = map[string]middleware.EarlyBind{
	"auto": middleware.EarlyBindAuto, "always": middleware.EarlyBindAlways, "off": middleware.EarlyBindOff,
}

// storeEnv names the environment variable that may hold the -store value.
const storeEnv = "A2A_IDEMPOTENCY_PROXY_STORE"

// defaultStore is the -store default when storeEnv is unset.
const defaultStore = "idempotency-proxy.db"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "a2a-idempotency-proxy:", err)
		os.Exit(2)
	}
}

// config is what the flags set.
type config struct {
	listen    string
	admin     string
	upstream  *url.URL
	publicURL string
	store     string
	table     string
	logLevel  slog.Level

	mw middleware.Options

	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	shutdownTimeout   time.Duration
	dialTimeout       time.Duration
	headerTimeout     time.Duration

	sweepInterval time.Duration
	keyMaxAge     time.Duration
}

// parse reads args into a config; getenv reads storeEnv.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("a2a-idempotency-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var upstream string
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8090", "`host:port` clients reach the proxy at; port 0 picks a free port")
	fs.StringVar(&c.admin, "admin", "127.0.0.1:8091", "`host:port` of the admin listener (/healthz, /livez, /metrics); empty turns it off")
	fs.StringVar(&upstream, "upstream", "", "base `URL` of the A2A server behind the proxy (required), e.g. http://127.0.0.1:8080")
	fs.StringVar(&c.publicURL, "public-url", "", "base `URL` clients use to reach the proxy; the agent card's interface URLs are rewritten to it (default: http:// and the Host the card was asked for)")
	fs.StringVar(&c.store, "store", defaultStore, "key store: a SQLite file `path`, or a postgres:// DSN; when the flag is not given, $"+storeEnv+" (when set) names it, so that a password stays out of the process list")
	fs.StringVar(&c.table, "table", sqlstore.DefaultTable, "key table `name`")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log `level`: DEBUG, INFO, WARN or ERROR (keys are redacted at every level)")
	fs.DurationVar(&c.mw.Lease, "lease", middleware.DefaultLease, "how long a claimed send may stay unbound before an identical retry may take it over")
	fs.Func("early-bind", "`mode` of forwarding keyed blocking sends as streaming sends to learn their task at the first event: "+
		"auto (when the upstream's card says it streams; the proxy reads the card every minute), always, or off (default auto)", func(v string) error {
		mode, ok := earlyBindModes[v]
		if !ok {
			return fmt.Errorf("want auto, always or off")
		}
		c.mw.EarlyBind = mode
		return nil
	})
	fs.DurationVar(&c.mw.ReplayWait, "replay-wait", middleware.DefaultReplayWait, "how long a retry waits for the first attempt's task before answering 409; negative: no wait")
	fs.Int64Var(&c.mw.MaxBodyBytes, "max-body-bytes", middleware.DefaultMaxBodyBytes, "largest request body the proxy reads; larger ones get 413")
	fs.DurationVar(&c.mw.IndexTimeout, "store-timeout", middleware.DefaultIndexTimeout, "bound on each key store call; a slower call fails the keyed send closed (503)")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "http.Server ReadHeaderTimeout of the public listener")
	fs.DurationVar(&c.readTimeout, "read-timeout", time.Minute, "http.Server ReadTimeout of the public listener (headers and body)")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 0, "http.Server WriteTimeout of the public listener; 0: none (streams and long blocking sends may last minutes)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "http.Server IdleTimeout: how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for requests in flight")
	fs.DurationVar(&c.dialTimeout, "upstream-dial-timeout", 10*time.Second, "bound on connecting to the upstream")
	fs.DurationVar(&c.headerTimeout, "upstream-header-timeout", 0, "bound on the upstream's response headers; 0: none (a blocking send answers when the agent is done)")
	fs.DurationVar(&c.sweepInterval, "sweep-interval", time.Hour, "how often keys past -key-max-age are deleted; 0 turns the sweep off")
	fs.DurationVar(&c.keyMaxAge, "key-max-age", idempotency.DefaultKeyMaxAge, "how old a key must be for the sweep to delete it")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	storeSet := false
	fs.Visit(func(f *flag.Flag) { storeSet = storeSet || f.Name == "store" })
	if v := getenv(storeEnv); v != "" && !storeSet {
		c.store = v
	}
	if upstream == "" {
		return nil, errors.New("-upstream is required: the base URL of the A2A server, e.g. -upstream http://127.0.0.1:8080")
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-upstream %q: want an http:// or https:// URL with a host", upstream)
	}
	c.upstream = u
	if c.publicURL != "" {
		p, err := url.Parse(c.publicURL)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("-public-url %q: want an http:// or https:// URL with a host", c.publicURL)
		}
		c.publicURL = strings.TrimSuffix(c.publicURL, "/")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read-header-timeout", c.readHeaderTimeout}, {"read-timeout", c.readTimeout}, {"write-timeout", c.writeTimeout},
		{"idle-timeout", c.idleTimeout}, {"shutdown-timeout", c.shutdownTimeout}, {"upstream-dial-timeout", c.dialTimeout},
		{"upstream-header-timeout", c.headerTimeout}, {"sweep-interval", c.sweepInterval}, {"key-max-age", c.keyMaxAge},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("-%s %v: must not be negative", d.name, d.v)
		}
	}
	if c.store == "" {
		return nil, errors.New("-store is empty: name a SQLite file or a postgres:// DSN")
	}
	return c, nil
}

// run parses args, serves until ctx ends, then shuts down gracefully. It prints
// where it listens to stdout and logs to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.logLevel}))

	st, err := openStore(ctx, c.store, c.table)
	if err != nil {
		return err
	}
	defer st.close()

	met := newMetrics()
	c.mw.Logger = log
	c.mw.Observe = met.observe
	idem, err := middleware.New(st.index, c.mw)
	if err != nil {
		return err
	}
	handler := idem(newProxy(c, log, met))
	public := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: c.readHeaderTimeout,
		ReadTimeout:       c.readTimeout,
		WriteTimeout:      c.writeTimeout,
		IdleTimeout:       c.idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	servers := []*http.Server{public}
	listeners := []net.Listener{ln}
	adminURL := "off"
	if c.admin != "" {
		aln, err := net.Listen("tcp", c.admin)
		if err != nil {
			ln.Close()
			return fmt.Errorf("admin listener: %w", err)
		}
		servers = append(servers, &http.Server{
			Handler:           adminHandler(st, met),
			ReadHeaderTimeout: c.readHeaderTimeout,
			IdleTimeout:       c.idleTimeout,
		})
		listeners = append(listeners, aln)
		adminURL = "http://" + aln.Addr().String()
	}

	// Read the card once before serving, so that the first keyed sends are already
	// forwarded as the upstream's card allows.
	cardOK := cardReadable(ctx, handler, log, false)

	fmt.Fprintf(stdout, "a2a-idempotency-proxy: listening http://%s, upstream %s, admin %s, keys in %s\n",
		ln.Addr(), c.upstream.Redacted(), adminURL, storeName(c.store))
	log.Info("a2a-idempotency-proxy started", "listen", ln.Addr().String(), "upstream", c.upstream.Redacted(),
		"admin", adminURL, "store", storeName(c.store), "lease", c.mw.Lease, "replay_wait", c.mw.ReplayWait)

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	bgDone := make(chan struct{}, 2)
	bgCtx, stopBg := context.WithCancel(ctx)
	go func() {
		defer func() { bgDone <- struct{}{} }()
		sweep(bgCtx, st.index, c.sweepInterval, idempotency.RetentionPolicy{KeyMaxAge: c.keyMaxAge}, log, met)
	}()
	go func() {
		defer func() { bgDone <- struct{}{} }()
		readCard(bgCtx, handler, cardInterval, !cardOK, log)
	}()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	stopBg()
	<-bgDone
	<-bgDone
	log.Info("a2a-idempotency-proxy shutting down", "wait", c.shutdownTimeout)
	shutCtx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	var errs []error
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, serveErr)
	}
	for _, srv := range servers {
		if err := srv.Shutdown(shutCtx); err != nil {
			log.Warn("requests still in flight at the end of the shutdown wait were cut", "error", err)
			srv.Close()
		}
	}
	return errors.Join(errs...)
}

// cardInterval is how often the proxy reads its own agent card.
const cardInterval = time.Minute

// readCard reads the agent card through h (the middleware in front of the upstream)
// every interval until ctx ends, as a client resolving the card would: the
// middleware learns from it whether the upstream streams (-early-bind auto). It logs
// when the card cannot be read.
func readCard(ctx context.Context, h http.Handler, interval time.Duration, failing bool, log *slog.Logger) {
	every(ctx, interval, func() { failing = !cardReadable(ctx, h, log, failing) })
}

// cardReadable reads the agent card through h once and reports whether it was
// served; failing says whether the last read failed, so that only changes are
// logged.
func cardReadable(ctx context.Context, h http.Handler, log *slog.Logger, failing bool) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, agentCardPath, nil)
	req.Host = "localhost"
	w := &statusWriter{header: make(http.Header)}
	h.ServeHTTP(w, req)
	ok := w.status == http.StatusOK
	switch {
	case !ok && !failing:
		log.Warn("the upstream's agent card could not be read; keyed blocking sends are forwarded as sent "+
			"until it can be (-early-bind auto)", "status", w.status)
	case ok && failing:
		log.Info("the upstream's agent card is readable")
	}
	return ok
}

// statusWriter is a ResponseWriter that keeps only the status.
type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

// sweep deletes old keys every interval until ctx ends.
func sweep(ctx context.Context, sw idempotency.Sweeper, interval time.Duration, policy idempotency.RetentionPolicy, log *slog.Logger, met *metrics) {
	if interval <= 0 {
		return
	}
	every(ctx, interval, func() {
		rep, err := sw.PurgeExpired(ctx, policy)
		met.swept(rep.KeysDeleted, err)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("retention sweep failed", "error", err, "keys_deleted", rep.KeysDeleted)
		case err == nil:
			log.Info("retention sweep", "keys_deleted", rep.KeysDeleted, "batches", rep.Batches, "complete", rep.Complete)
		}
	})
}

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}
