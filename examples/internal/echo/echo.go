// Package echo is what the example servers share that is not the kit: the agent they
// serve (it echoes each message after working for a while) and its flags, its agent
// card, the agent's run counter, the task and key stores side by side in one
// database, and listening and serving with the timeouts every HTTP server wants.
// Each example's main.go shows the kit's steps around it.
package echo

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Where the examples mount the A2A bindings; the agent card lists them.
const (
	JSONRPCPath    = "/jsonrpc"
	RESTPath       = "/rest"    // POST /rest/message:send, ...
	TenantRESTPath = "/tenants" // POST /tenants/{tenant}/message:send, ...
	VarsPath       = "/debug/vars"
)

// Agent echoes the text of each message after working for Delay: it creates a task
// (SUBMITTED, WORKING, an artifact "echo: <text>", COMPLETED), or, with
// ReplyMessage, answers a new message with a Message "echo: <text>".
type Agent struct {
	Delay        time.Duration
	ReplyMessage bool
}

// Execute implements a2asrv.AgentExecutor.
func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		runs.Add(1)
		echo := a2a.NewTextPart("echo: " + textOf(ec.Message))
		if ec.StoredTask == nil && a.ReplyMessage {
			if err := work(ctx, a.Delay); err != nil {
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
		if err := work(ctx, a.Delay); err != nil {
			yield(nil, err)
			return
		}
		if yield(a2a.NewArtifactEvent(ec, echo), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

// Cancel implements a2asrv.AgentExecutor.
func (a *Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
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

// runs counts the agent's runs in this process.
var runs = expvar.NewInt("agent_runs")

// ServeRuns serves the agent's run count, and nothing else of the process, as the
// JSON object {"agent_runs": n} (the demo client reads it at VarsPath).
func ServeRuns(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, "{%q: %d}\n", "agent_runs", runs.Value())
}

// Card is the agent card of the server at base: JSON-RPC, HTTP+JSON, HTTP+JSON with
// a tenant path segment, and gRPC at grpcTarget when that is not empty. It does not
// declare the idempotency extension: the middleware adds it to the card it serves,
// and only when its index can honour keys. (A server that signs its card declares
// it with adapter.DeclareExtension before signing.)
func Card(base, grpcTarget string) *a2a.AgentCard {
	tenant := a2a.NewAgentInterface(base+TenantRESTPath, a2a.TransportProtocolHTTPJSON)
	tenant.Tenant = "demo" // the tenant routes accept any tenant; the card names one
	interfaces := []*a2a.AgentInterface{
		a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
		tenant,
	}
	if grpcTarget != "" {
		interfaces = append(interfaces, a2a.NewAgentInterface(grpcTarget, a2a.TransportProtocolGRPC))
	}
	return &a2a.AgentCard{
		Name:                "Echo",
		Description:         "Echoes each message back after working for a while. Sends that carry an idempotency key run once.",
		Version:             "1.0.0",
		SupportedInterfaces: interfaces,
		Capabilities:        a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "Echoes the text of the message.", Tags: []string{"echo"}}},
	}
}

// PrintURLs prints the URLs of the server at base, one a line, the run counter
// last (the examples' tests wait for that line).
func PrintURLs(w io.Writer, base string) {
	fmt.Fprintf(w, "agent card:        %s%s\n", base, a2asrv.WellKnownAgentCardPath)
	fmt.Fprintf(w, "JSON-RPC:          %s%s\n", base, JSONRPCPath)
	fmt.Fprintf(w, "HTTP+JSON:         %s%s\n", base, RESTPath)
	fmt.Fprintf(w, "HTTP+JSON, tenant: %s%s/{tenant}\n", base, TenantRESTPath)
	fmt.Fprintf(w, "agent_runs:        %s%s\n", base, VarsPath)
}

// Listen listens on addr and returns the base URL clients reach it at, with the port
// the system picked for port 0, and localhost for all interfaces.
func Listen(addr string) (net.Listener, string, error) {
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

// Serve serves h on ln until ctx ends, then shuts down gracefully: it stops accepting
// connections and waits at most ten seconds for the requests in progress.
//
// The timeouts bound what a client that stalls can hold: its headers for ten seconds,
// its whole request for readTimeout, an idle keep-alive connection for two minutes.
// There is no write timeout: a stream, or a blocking send of a long task, may last
// minutes.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, readTimeout time.Duration, logger *slog.Logger) error {
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
