package exampleserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
)

// Config is what the examples' flags set.
type Config struct {
	// Addr is the address to listen on, host:port; port 0 picks a free port.
	Addr string
	// Store is a SQLite file path, or a postgres:// DSN.
	Store string
	// Table is the key table's name.
	Table string
	// Delay is how long the agent works before it completes.
	Delay time.Duration
	// Reply is "task" (the agent creates a task) or "message" (it answers with a
	// Message).
	Reply string
	// Lease is the middleware's in-flight lease (middleware.Options.Lease).
	Lease time.Duration
}

// RegisterFlags defines the examples' flags on fs, writing into c.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free port")
	fs.StringVar(&c.Store, "store", DefaultStore, "key store: a SQLite file `path`, or a postgres:// DSN")
	fs.StringVar(&c.Table, "table", sqlstore.DefaultTable, "key table `name` (in the SQLite file or the PostgreSQL database)")
	fs.DurationVar(&c.Delay, "delay", 2*time.Second, "how long the agent works before it completes")
	fs.StringVar(&c.Reply, "reply", "task", "what the agent answers with: task or message")
	fs.DurationVar(&c.Lease, "lease", middleware.DefaultLease, "how long a claimed send may stay unbound before an identical retry takes it over")
}

// MiddlewareOptions returns the examples' middleware options: c's lease, logger, and a
// scope that is the tenant a2a-go sees, its REST path segment included (see
// middleware.TenantPathScope).
func (c *Config) MiddlewareOptions(logger *slog.Logger) middleware.Options {
	return middleware.Options{Logger: logger, Lease: c.Lease, Scope: middleware.TenantPathScope(TenantRESTPath)}
}

// Agent returns the agent c describes, or an error for a bad -reply value.
func (c *Config) Agent() (*Agent, error) {
	switch c.Reply {
	case "task":
		return &Agent{Delay: c.Delay}, nil
	case "message":
		return &Agent{Delay: c.Delay, ReplyMessage: true}, nil
	}
	return nil, fmt.Errorf("-reply %q: want task or message", c.Reply)
}

// Listen listens on addr and returns the listener with the base URL clients reach it
// at. With port 0 the base URL has the port the system picked. A listener on all
// interfaces (":8080", "0.0.0.0:8080") is announced as localhost.
func Listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, "", err
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return ln, "http://" + net.JoinHostPort(host, port), nil
}

// PrintURLs writes what a server at base serves, one URL a line.
func PrintURLs(w io.Writer, base string) {
	fmt.Fprintf(w, "agent card:        %s%s\n", base, a2asrv.WellKnownAgentCardPath)
	fmt.Fprintf(w, "JSON-RPC:          %s%s\n", base, JSONRPCPath)
	fmt.Fprintf(w, "HTTP+JSON:         %s%s\n", base, RESTPath)
	fmt.Fprintf(w, "HTTP+JSON, tenant: %s%s/{tenant}\n", base, TenantRESTPath)
	fmt.Fprintf(w, "agent_runs:        %s%s\n", base, VarsPath)
}

// shutdownTimeout bounds how long Serve waits for requests in progress to finish
// once it is told to stop.
const shutdownTimeout = 10 * time.Second

// Serve serves h until ctx ends, then shuts the server down gracefully: it stops
// accepting connections and waits for the requests in progress, for at most ten
// seconds. It returns nil after a graceful shutdown.
func (s *Server) Serve(ctx context.Context, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(s.ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	s.Logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
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
