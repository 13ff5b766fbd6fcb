// Package exampletest runs the example servers in the examples' tests: it starts an
// example's run function in-process on a free port, provides a fresh key table in
// the PostgreSQL database named by IDEMPOTENCY_POSTGRES_DSN, and runs the demo client's
// demonstration (package retrydemo) against a server, checking what it observed.
package exampletest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/examples/internal/retrydemo"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/redisstore/redistest"
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

// RedisKeys returns the -keys URL of the test server with a prefix of the test's own,
// and checks when the test ends that the server kept keys there (the example did not
// fall back to its SQL key table).
func RedisKeys(t *testing.T) string {
	t.Helper()
	url := redistest.URL(t)
	prefix := redistest.Prefix(t, url)
	rdb := redistest.Client(t, url)
	t.Cleanup(func() {
		if n, err := rdb.Keys(context.Background(), prefix+"*").Result(); err != nil || len(n) == 0 {
			t.Errorf("Redis holds %d keys under the test's prefix (%v); want the example's keys there", len(n), err)
		}
	})
	return url + "?prefix=" + prefix
}

// PostgresDSN returns the DSN in IDEMPOTENCY_POSTGRES_DSN. It skips the test when
// the variable is unset, and fails it when the database cannot be reached.
func PostgresDSN(t *testing.T) string { return testdb.Postgres(t) }

// PostgresTable returns a key table name of its own for this test run, and drops the
// table when the test ends, so that runs sharing the database do not collide.
func PostgresTable(t *testing.T, dsn, prefix string) string { return testdb.TempTable(t, dsn, prefix) }

// CheckTaskDemos runs the demonstration against srv once per demo, each as a
// subtest, and checks what each observed (CheckTaskDemo). A demo is a binding
// (jsonrpc or rest), optionally followed by a space and a tenant: "rest acme".
func CheckTaskDemos(t *testing.T, srv *Server, demos ...string) {
	t.Helper()
	for _, demo := range demos {
		binding, tenant, _ := strings.Cut(demo, " ")
		t.Run(demo, func(t *testing.T) {
			CheckTaskDemo(t, RunDemo(t, DemoOptions(srv.URL, binding, tenant)))
		})
	}
}

// DemoOptions are the demonstration's options for a server whose agent works for
// about a second: the client gives up on first attempts after 300 ms.
func DemoOptions(url, binding, tenant string) retrydemo.Options {
	return retrydemo.Options{
		URL:      url,
		Binding:  binding,
		Tenant:   tenant,
		Cut:      300 * time.Millisecond,
		Interval: 100 * time.Millisecond,
	}
}

// RunDemo runs the demonstration with opts, and returns its report. The narrative is
// written to the test log (opts.Out is replaced). A step that could not be carried out fails
// the test.
func RunDemo(t *testing.T, opts retrydemo.Options) *retrydemo.Report {
	t.Helper()
	var out bytes.Buffer
	opts.Out = &out
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := retrydemo.Run(ctx, opts)
	t.Logf("demo, %s binding, tenant %q:\n%s", opts.Binding, opts.Tenant, out.String())
	if err != nil {
		t.Fatalf("the demonstration failed: %v", err)
	}
	return rep
}

// CheckTaskDemo checks the report of a demonstration against an agent that creates
// tasks and works longer than the demo's cut: the unkeyed message ran and was
// answered; the keyed first attempt was cut, every retry named the same task, the
// first while the agent was still working and the last completed, and the agent ran
// once; the reused key was refused as already held; keyedclient's send ran the agent
// once.
func CheckTaskDemo(t *testing.T, rep *retrydemo.Report) {
	t.Helper()
	if !rep.UnkeyedCut {
		t.Errorf("the unkeyed first attempt was answered within the cut; the agent should still have been working")
	}
	if a := rep.UnkeyedAnswer; a.Kind != "task" || a.State != a2a.TaskStateCompleted || a.Text != "echo: hello without a key" {
		t.Errorf("the unkeyed re-send got %v, want a completed task echoing the message", a)
	}
	if rep.UnkeyedRuns < 1 {
		t.Errorf("the unkeyed sends ran the agent %d times, want at least 1", rep.UnkeyedRuns)
	}

	if !rep.KeyedCut {
		t.Errorf("the keyed first attempt was answered within the cut; the agent should still have been working")
	}
	if len(rep.Answers) < 2 {
		t.Fatalf("the keyed send got %d answers, want a retry during the run and one after it: %v", len(rep.Answers), rep.Answers)
	}
	first, last := rep.Answers[0], rep.Answers[len(rep.Answers)-1]
	if first.Kind != "task" || first.ID == "" || first.Final() {
		t.Errorf("the first retry got %v, want the task still running (a retry does not wait for the run)", first)
	}
	for _, a := range rep.Answers {
		if a.Kind != "task" || a.ID != first.ID {
			t.Errorf("a retry got %v, want task %s like the first retry", a, first.ID)
		}
	}
	if last.State != a2a.TaskStateCompleted || last.Text != "echo: hello with a key" {
		t.Errorf("the last retry got %v, want the task completed with the echo", last)
	}
	if rep.KeyedRuns != 1 {
		t.Errorf("the keyed send and its %d retries ran the agent %d times, want 1", len(rep.Answers), rep.KeyedRuns)
	}
	checkRefusal(t, rep)
	if rep.AutoAnswer.Kind != "task" || rep.AutoAnswer.ID == "" {
		t.Errorf("keyedclient's send got %v, want a task", rep.AutoAnswer)
	}
	if rep.AutoRuns != 1 {
		t.Errorf("keyedclient's send ran the agent %d times, want 1", rep.AutoRuns)
	}
	if err := rep.Check(); err != nil {
		t.Errorf("Report.Check, which the demo client exits on: %v", err)
	}
}

// CheckMessageDemo checks the report of a demonstration against an agent that
// answers at once with a Message: every keyed answer is the same Message, the agent
// ran once for the keyed send, and the reused key was refused.
func CheckMessageDemo(t *testing.T, rep *retrydemo.Report) {
	t.Helper()
	if a := rep.UnkeyedAnswer; a.Kind != "message" || a.Text != "echo: hello without a key" {
		t.Errorf("the unkeyed re-send got %v, want a Message echoing the message", a)
	}
	if rep.UnkeyedRuns != 2 {
		t.Errorf("the unkeyed message, sent twice, ran the agent %d times, want 2 (nothing deduplicates it)", rep.UnkeyedRuns)
	}
	if len(rep.Answers) < 2 {
		t.Fatalf("the keyed send got %d answers, want the first attempt's and a retry's: %v", len(rep.Answers), rep.Answers)
	}
	for _, a := range rep.Answers {
		if a.Kind != "message" || a.ID != rep.Answers[0].ID || a.Text != "echo: hello with a key" {
			t.Errorf("a keyed answer was %v, want Message %s echoing the message, like the first", a, rep.Answers[0].ID)
		}
	}
	if rep.KeyedRuns != 1 {
		t.Errorf("the keyed send and its retry ran the agent %d times, want 1", rep.KeyedRuns)
	}
	checkRefusal(t, rep)
	if err := rep.Check(); err != nil {
		t.Errorf("Report.Check, which the demo client exits on: %v", err)
	}
}

func checkRefusal(t *testing.T, rep *retrydemo.Report) {
	t.Helper()
	if rep.Refusal == nil || !strings.Contains(rep.Refusal.Error(), "already held") {
		t.Errorf("the key reused for a different message got %v, want a refusal containing \"already held\"", rep.Refusal)
	}
}

// CheckRestart checks that a server restarted on the same store answers a retry of
// a send from before the restart with the send's task: it starts a server with
// run and args (which name the store), sends a keyed message, waits until its task
// has completed, stops the server and starts another on the same store, and
// retries the send there. The retry must get the same task, completed, and the agent
// must not run again.
func CheckRestart(t *testing.T, run RunFunc, args ...string) {
	t.Helper()
	const key = "restart-key-0123456789abcdef"
	body := KeyedSendBody("restart-message", key, "hello across a restart")
	first := Start(t, run, args...)
	var task struct {
		Task struct {
			ID     string `json:"id"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
			Artifacts []json.RawMessage `json:"artifacts"`
		} `json:"task"`
	}
	read := func(srv *Server) {
		t.Helper()
		status, answer := Send(t, srv.URL+"/rest/message:send", body)
		if err := json.Unmarshal([]byte(answer), &task); status != http.StatusOK || err != nil || task.Task.ID == "" {
			t.Fatalf("keyed send: %d %s, want a task", status, answer)
		}
	}
	read(first)
	id := task.Task.ID
	for deadline := time.Now().Add(startTimeout); task.Task.Status.State != "TASK_STATE_COMPLETED"; read(first) {
		if time.Now().After(deadline) {
			t.Fatalf("task %s did not complete within %v: %s", id, startTimeout, task.Task.Status.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runs := Runs(t, first)
	first.Stop()

	second := Start(t, run, args...)
	read(second)
	if task.Task.ID != id || task.Task.Status.State != "TASK_STATE_COMPLETED" || len(task.Task.Artifacts) != 1 {
		t.Errorf("the retry after the restart got task %s in state %s with %d artifacts, want task %s completed with its artifact",
			task.Task.ID, task.Task.Status.State, len(task.Task.Artifacts), id)
	}
	if n := Runs(t, second); n != runs {
		t.Errorf("the agent's run count went from %d to %d across the restart and the retry, want no new run", runs, n)
	}
}

// CheckConcurrentDuplicates sends n identical keyed messages at once to the server's
// HTTP+JSON binding: every answer must be 200 and name one task, and the agent must
// have run once.
func CheckConcurrentDuplicates(t *testing.T, srv *Server, n int) {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	key := "crowd-key-" + hex.EncodeToString(b[:])
	body := KeyedSendBody("crowd-"+hex.EncodeToString(b[:]), key, "hello, crowd")
	before := Runs(t, srv)
	answers := make([]wireclient.Answer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/rest/message:send", "application/json", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			answers[i], errs[i] = wireclient.ReadAnswer(resp, wireclient.Send{Binding: wireclient.HTTPJSON})
		})
	}
	wg.Wait()
	// The rule of the replay marker: one answer (the first send's) without it, every
	// other with it.
	var rule wireclient.MarkerRule
	replayed := 0
	for i, a := range answers {
		if errs[i] != nil || a.Status != http.StatusOK || a.Kind != wireclient.Task || a.TaskID != answers[0].TaskID {
			t.Errorf("send %d of %d identical sends: %v, %v; want 200 and task %q", i, n, a, errs[i], answers[0].TaskID)
		}
		rule.Check(key, a)
		if a.Replayed {
			replayed++
		}
	}
	if err := rule.Err(); err != nil || replayed != n-1 {
		t.Errorf("%d of %d identical sends were marked %s: true, want %d: %v", replayed, n, idempotency.ReplayedHeader, n-1, err)
	}
	if runs := Runs(t, srv) - before; runs != 1 {
		t.Errorf("%d identical sends ran the agent %d times, want 1", n, runs)
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
			return 0, errors.New("exampletest: too many lines unread")
		}
		w.partial = w.partial[i+1:]
	}
}

// CheckNoLeaks starts the server with its keys in PostgreSQL behind a DSN that carries
// a password, given on the command line (as os.Args shows it) and, separately, in
// IDEMPOTENCY_STORE, and checks that its public listener publishes neither the
// password nor the process's debug variables, and that a client that stalls its
// request body is cut off after -read-timeout (issue 14, item 9).
func CheckNoLeaks(t *testing.T, run RunFunc, prefix string) {
	dsn := PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const password = "s3cret-pw" // trust auth on loopback ignores it
	u.User = url.UserPassword(u.User.Username(), password)
	table := PostgresTable(t, dsn, prefix)
	tasks := PostgresTable(t, dsn, prefix+"_tasks")

	for _, how := range []string{"flag", "environment"} {
		t.Run(how, func(t *testing.T) {
			args := []string{"-table", table, "-tasks", tasks, "-read-timeout", "300ms"}
			if how == "flag" {
				args = append(args, "-store", u.String())
				saved := os.Args
				os.Args = append([]string{"server"}, args...)
				t.Cleanup(func() { os.Args = saved })
			} else {
				t.Setenv("IDEMPOTENCY_STORE", u.String())
			}
			srv := Start(t, run, args...)
			if banner := strings.Join(srv.Banner, "\n"); strings.Contains(banner, password) || !strings.Contains(banner, "PostgreSQL") {
				t.Errorf("the banner shows the password, or no PostgreSQL store:\n%s", banner)
			}
			for _, path := range []string{"/debug/vars", "/debug/pprof/"} {
				code, body := get(t, srv.URL+path)
				if strings.Contains(body, password) || strings.Contains(body, "cmdline") || strings.Contains(body, "memstats") {
					t.Errorf("GET %s (%d) publishes the command line or debug variables: %.300s", path, code, body)
				}
			}
			conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.Copy(io.Discard, conn); err != nil {
				t.Errorf("a stalled request body was not cut off by the server's read timeout: %v", err)
			}
		})
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
