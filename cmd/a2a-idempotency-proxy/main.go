// Command a2a-idempotency-proxy puts the idempotency kit in front of any A2A server
// over HTTP, whatever its language: a sidecar that claims keyed sends in a SQLite,
// PostgreSQL (or Redis) key store and passes every request on to the server.
//
//	go install github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy@latest
//	a2a-idempotency-proxy -upstream http://127.0.0.1:8080 -public-url https://agents.example.com
//
// Clients talk to the proxy (-listen, default 127.0.0.1:8090) instead of the server
// (-upstream). Every flag may also come from an environment variable named after it
// with the prefix IDEMPOTENCY_ (-public-url is $IDEMPOTENCY_PUBLIC_URL, -store
// $IDEMPOTENCY_STORE, the place for a DSN with a password); a flag on the command
// line wins. -version prints the version, -h the flags.
//
// # Agent card
//
// The proxy serves the server's agent card with the idempotency extension added to
// capabilities.extensions and the card's interface URLs rewritten to the proxy's
// public URL, editing the card's bytes, so clients that read the card keep coming
// through the proxy; a signed card is served as it is. The public URL is -public-url;
// without it, it is what the X-Forwarded-Host and X-Forwarded-Proto (or Forwarded)
// headers say, only from the reverse proxies -trusted-proxies names (the last value,
// the one that peer wrote), or http:// and a loopback Host (a developer's machine).
// Any other card request is refused with 503 and a log line: a Host or a forwarded
// header a client chose is never advertised, since a cache in front would then send
// other clients to that host.
//
// # Keyed sends
//
// Every other request is passed on as it is, headers and status kept, streams
// flushed event by event. Keyed sends go through the kit's middleware: one run per
// key, and a retry gets the first attempt's task (see the middleware package,
// "Servers the kit cannot see inside"). The proxy reads the card through the
// middleware before it serves and every minute, so that the middleware knows whether
// the server streams (-early-bind auto): then a keyed blocking send is forwarded as a
// streaming send, its key bound at the first event, and answered in the unary shape
// when the run ends.
//
// A key's scope is the tenant the server routes the send by: the body's tenant, or
// for an HTTP+JSON send the tenant its path names (-tenant-path, default
// /tenants/{*} then /{*}, the templates of a2a-go's NewTenantRESTHandler), so that
// /tenants/acme/message:send and /tenants/globex/message:send never share keys. A
// send at the HTTP+JSON mount the upstream's card lists (/rest for an interface
// http://upstream/rest) is in the body's tenant's key space, as a JSON-RPC send is,
// so that a retry over the other binding meets it; a send under a path no template
// matches is scoped by that path (the one decision of middleware.TenantRoutes).
// -principal-header names a header an authenticating proxy in front sets to the
// caller: every key is then bound to its caller (middleware.Options.Principal), so
// that another caller's retry of it is answered "already held", and keyed sends
// without it are refused.
//
// Every request body forwarded is bounded by -max-body-bytes (413 in the binding's
// shape), except under -unbounded-paths (uploads that are not A2A).
//
// Keys live in -store: a SQLite file (default idempotency-proxy.db, created if
// missing), a postgres:// DSN or a redis:// URL. Several proxies in front of one
// server (or its replicas) share keys through one PostgreSQL database or Redis.
// Keys older than -key-max-age are swept every -sweep-interval.
//
// # Admin listener
//
// An admin listener (-admin, default 127.0.0.1:8091; empty turns it off) serves
// GET /livez (200 while the process serves), GET /readyz (200 when the key store and
// the upstream answer, else 503 with a line saying which is down; /healthz is the
// same) and GET /metrics in Prometheus text format: the middleware's outcomes (every
// series from zero) and the time it spent, as package middleware/metrics serves
// them, then the proxy's build, upstream request durations, sends in flight,
// upstream errors, retention sweeps, and the Go runtime's and the process's metrics.
// It is a separate listener so that these stay off the public port.
//
// SIGINT or SIGTERM stops the proxy gracefully: it stops accepting, lets requests in
// flight finish for up to -shutdown-timeout, then closes what is left.
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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

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

// newLogger returns the logger -log-format and -log-level ask for.
func newLogger(c *config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.logLevel}
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// run parses args, serves until ctx ends, then shuts down gracefully. It prints
// where it listens to stdout and logs to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	if c.showVersion {
		fmt.Fprintln(stdout, versionLine())
		return nil
	}
	log := newLogger(c, stderr)

	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.close()

	met := newMetrics()
	limit := &bodyLimit{limit: c.mw.MaxBodyBytes, unbounded: c.unbounded}
	pub := &publicBases{fixed: c.publicURL, trusted: c.trusted, log: log}
	var fromTrusted func(*http.Request) bool
	if len(c.trusted) > 0 {
		fromTrusted = pub.fromTrusted
	}
	c.mw.Tenants = c.routes // taught the upstream's mounts by the proxy (proxy.go)
	if c.principalHeader != "" {
		c.mw.Principal = newPrincipal(c.principalHeader, fromTrusted)
	}
	c.mw.Reads = limit.reads
	c.mw.Logger = log
	c.mw.Observe = met.observe
	idem, err := middleware.New(st.index, c.mw)
	if err != nil {
		return err
	}
	// Outside in: the card's public URL, the sends-in-flight count, the middleware
	// (which reads JSON bodies within the limit), the limit of every other body, the
	// forward.
	handler := pub.guard(countSends(idem(limit.wrap(newProxy(c, log, met))), met.inFlight, limit))
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
		adm := &admin{store: st, met: met, log: log,
			upstream: func(ctx context.Context) bool { return cardStatus(ctx, handler) == http.StatusOK }}
		servers = append(servers, &http.Server{
			Handler:           adm.handler(),
			ReadHeaderTimeout: c.readHeaderTimeout,
			IdleTimeout:       c.idleTimeout,
		})
		listeners = append(listeners, aln)
		adminURL = "http://" + aln.Addr().String()
	}

	// Read the card once before serving, so that the first keyed sends are already
	// forwarded as the upstream's card allows.
	cardOK := cardReadable(ctx, handler, log, false)

	ver, _ := buildInfo()
	fmt.Fprintf(stdout, "a2a-idempotency-proxy: listening http://%s, upstream %s, admin %s, keys in %s\n",
		ln.Addr(), c.upstream.Redacted(), adminURL, st.name)
	log.Info("a2a-idempotency-proxy started", "version", ver, "listen", ln.Addr().String(), "upstream", c.upstream.Redacted(),
		"admin", adminURL, "store", st.name, "lease", c.mw.Lease, "replay_wait", c.mw.ReplayWait,
		"max_body_bytes", c.mw.MaxBodyBytes, "tenant_paths", c.tenantPaths, "principal_header", c.principalHeader)
	if c.publicURL == "" {
		log.Info("no -public-url: the agent card is served only to requests with a loopback Host" +
			map[bool]string{true: " or with X-Forwarded-Host/Forwarded from a -trusted-proxies peer", false: ""}[len(c.trusted) > 0] +
			"; any other card request is refused (503). Set -public-url to the URL clients reach the proxy at")
	}

	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	bgDone := make(chan struct{}, 2)
	bgCtx, stopBg := context.WithCancel(ctx)
	go func() {
		defer func() { bgDone <- struct{}{} }()
		if st.sweeper != nil && c.sweepInterval > 0 {
			idempotency.SweepRunner{Sweeper: st.sweeper, Interval: c.sweepInterval, Logger: log, OnSweep: met.swept,
				Policy: idempotency.RetentionPolicy{KeyMaxAge: c.keyMaxAge}}.Run(bgCtx)
		}
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
	status := cardStatus(ctx, h)
	ok := status == http.StatusOK
	switch {
	case !ok && !failing:
		log.Warn("the upstream's agent card could not be read; keyed blocking sends are forwarded as sent "+
			"until it can be (-early-bind auto)", "status", status)
	case ok && failing:
		log.Info("the upstream's agent card is readable")
	}
	return ok
}

// cardStatus reads the agent card through h (the whole public handler, as a client
// on this machine would) and returns the status of the answer.
func cardStatus(ctx context.Context, h http.Handler) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, agentCardPath, nil)
	req.Host = "localhost"
	req.RemoteAddr = "127.0.0.1:0"
	w := &statusWriter{header: make(http.Header)}
	h.ServeHTTP(w, req)
	return w.status
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
