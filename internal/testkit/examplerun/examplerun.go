// Package examplerun runs the example servers (the examples module's commands) in
// their tests: it starts an example's run function in-process on a free port, checks
// what it printed and serves, runs a client demonstration against it as subtests
// ([CheckDemos]), and checks restarts, concurrent duplicates and what the public
// listener must not leak.
package examplerun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
)

// RunFunc is an example's run function: it serves until ctx ends, printing the URLs
// it serves to stdout and logging to stderr.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Server is an example server started by Start.
type Server struct {
	// URL is the server's base URL, read from the agent card line it printed.
	URL string
	// GRPC is the host:port of its gRPC binding, read from its gRPC line, or empty.
	GRPC string
	// Banner is what it printed before serving.
	Banner []string

	stop func()
}

// Stop stops the server as SIGINT does and waits until it has stopped; the test
// fails unless run returned nil. Start stops it when the test ends, if it is still
// running.
func (s *Server) Stop() { s.stop() }

// startTimeout bounds how long Start waits for a server to print its URLs. It is a
// bound against hanging, not a measure of speed.
const startTimeout = time.Minute

// Start runs run with args plus "-addr 127.0.0.1:0" in a goroutine, and returns
// once the server has printed its URLs. When the test ends, it stops the server
// (cancelling run's context, as SIGINT does) and fails the test unless run returns nil.
// The server's logs are written to the test log when the test fails.
func Start(t *testing.T, run RunFunc, args ...string) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan string, 64)
	var stderr testkit.Buffer
	var runErr error
	finished := make(chan struct{})
	go func() {
		defer close(lines)
		defer close(finished)
		runErr = run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), &lineWriter{lines: lines}, &stderr)
	}()
	stoppedEarly := false
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-finished:
				if runErr != nil && !stoppedEarly {
					t.Errorf("the server returned %v after it was told to stop, want nil", runErr)
				}
			case <-time.After(startTimeout):
				t.Errorf("the server did not stop within %v of being told to", startTimeout)
			}
			if t.Failed() {
				t.Logf("server log:\n%s", stderr.String())
			}
		})
	}
	t.Cleanup(stop)

	srv := &Server{stop: stop}
	timeout := time.After(startTimeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				stoppedEarly = true
				t.Fatalf("the server stopped before printing its URLs: %v", runErr)
			}
			srv.Banner = append(srv.Banner, line)
			if card, ok := strings.CutPrefix(line, "agent card:"); ok {
				srv.URL = strings.TrimSuffix(strings.TrimSpace(card), "/.well-known/agent-card.json")
			}
			if target, ok := strings.CutPrefix(line, "gRPC:"); ok {
				srv.GRPC = strings.TrimSpace(target)
			}
			if strings.HasPrefix(line, "agent_runs:") {
				if srv.URL == "" {
					t.Fatalf("the server printed no agent card URL:\n%s", strings.Join(srv.Banner, "\n"))
				}
				return srv
			}
		case <-timeout:
			t.Fatalf("the server printed no URLs within %v:\n%s", startTimeout, strings.Join(srv.Banner, "\n"))
		}
	}
}

// CheckServer checks what the server printed (store is how it names its key store), and that its agent card points at the
// address it listens on and declares the extension.
func CheckServer(t *testing.T, srv *Server, store string) {
	t.Helper()
	banner := strings.Join(srv.Banner, "\n")
	for _, want := range []string{
		store,
		srv.URL + "/.well-known/agent-card.json",
		srv.URL + "/jsonrpc",
		srv.URL + "/rest",
		srv.URL + "/tenants/{tenant}",
		srv.URL + "/debug/vars",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("the server printed\n%s\nwhich lacks %q", banner, want)
		}
	}

	resp, err := http.Get(srv.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatalf("agent card: %v", err)
	}
	var onHTTP, onGRPC int
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolGRPC {
			onGRPC++
			if iface.URL != srv.GRPC {
				t.Errorf("the card lists gRPC at %s, not at the address the server printed, %q", iface.URL, srv.GRPC)
			}
			continue
		}
		onHTTP++
		if !strings.HasPrefix(iface.URL, srv.URL+"/") {
			t.Errorf("the card lists %s at %s, not at the server's address %s", iface.ProtocolBinding, iface.URL, srv.URL)
		}
	}
	if onHTTP != 3 {
		t.Errorf("the card lists %d HTTP interfaces, want JSON-RPC, HTTP+JSON and HTTP+JSON with a tenant", onHTTP)
	}
	if want := min(len(srv.GRPC), 1); onGRPC != want {
		t.Errorf("the card lists %d gRPC interfaces, want %d (the server printed gRPC address %q)", onGRPC, want, srv.GRPC)
	}
	if !adapter.DeclaresExtension(&card) {
		t.Errorf("the served card does not declare the idempotency extension: %+v", card.Capabilities)
	}
}

// Runs reads the agent's run count (agent_runs, counted in the test's process) from
// the server's /debug/vars.
func Runs(t *testing.T, srv *Server) int64 {
	t.Helper()
	n, err := testkit.ReadRuns(context.Background(), http.DefaultClient, srv.URL+"/debug/vars", "agent_runs")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Send posts body to url and returns the response's status and body.
func Send(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// KeyedSendBody is the HTTP+JSON body of a send of text with messageID and key, in
// no tenant, that returns at once instead of waiting for the agent.
func KeyedSendBody(messageID, key, text string) string {
	return fmt.Sprintf(`{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}],"metadata":{%q:%q}},`+
		`"configuration":{"returnImmediately":true}}`, messageID, text, idempotency.MetadataKey, key)
}

// lineWriter sends each complete line written to it on lines.
type lineWriter struct {
	mu      sync.Mutex
	partial []byte
	lines   chan<- string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.partial[:i]):
		default:
			return 0, errors.New("examplerun: too many lines unread")
		}
		w.partial = w.partial[i+1:]
	}
}
