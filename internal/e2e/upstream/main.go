// Command upstream is an A2A server the kit cannot see inside: a plain a2a-go v2
// echo agent with no adapter and no middleware, for the end-to-end tests that put the
// kit in front of a server in another process (internal/e2e/anyserver).
//
// It serves JSON-RPC at /jsonrpc, HTTP+JSON at /rest and, by tenant, at
// /tenants/{tenant} (a2a-go's tenant REST handler), the agent card at
// /.well-known/agent-card.json (capabilities.streaming true, or false with
// -no-streaming, though a2a-go serves streams either way), and the number of runs the
// agent started at GET /runs, as a decimal number, and at GET /debug/vars as
// {"agent_runs": n}, the shape a2aload reads. When it listens it prints one
// line, "listening http://127.0.0.1:port", to stdout. The agent is the test kit's,
// working -delay unless a message says otherwise ("wait 2s hi"); a text that begins
// with "reply" is answered with a Message.
//
//	go run ./upstream -addr 127.0.0.1:8080 -delay 3s
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`host:port` to listen on; port 0 picks a free port")
	delay := flag.Duration("delay", 0, "how long each run works before it completes")
	noStreaming := flag.Bool("no-streaming", false, "declare capabilities.streaming false on the card (a2a-go still serves streams)")
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
	base := "http://" + ln.Addr().String()
	ag := &testkit.Agent{Delay: *delay, WaitWord: true, ReplyPrefix: "reply"}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	handler := a2asrv.NewHandler(ag, a2asrv.WithLogger(log))

	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card(base, !*noStreaming)))
	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(handler)))
	mux.Handle("/tenants/", http.StripPrefix("/tenants", a2asrv.NewTenantRESTHandler("/{*}", handler)))
	mux.HandleFunc("GET /runs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, ag.Runs())
	})
	mux.HandleFunc("GET /debug/vars", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, "{\"agent_runs\": %d}\n", ag.Runs())
	})

	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Println("listening", base)
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func card(base string, streaming bool) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name:        "upstream",
		Description: "an echo agent the kit cannot see inside",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+"/jsonrpc", a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+"/rest", a2a.TransportProtocolHTTPJSON),
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: streaming},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}
