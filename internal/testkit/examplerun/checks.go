package examplerun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/servercheck"
)

// A Demo runs a client demonstration against the server at url, on binding
// ("jsonrpc" or "rest") and, when set, in tenant, narrating to out, and returns what
// went wrong: a step it could not carry out, or an answer it did not expect.
type Demo func(ctx context.Context, url, binding, tenant string, out io.Writer) error

// CheckDemos runs demo against srv once per "binding [tenant]" in demos ("rest acme"),
// each as a subtest that fails with what the demo returned; the narrative goes to
// the test log.
func CheckDemos(t *testing.T, srv *Server, demo Demo, demos ...string) {
	t.Helper()
	for _, d := range demos {
		binding, tenant, _ := strings.Cut(d, " ")
		t.Run(d, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			defer cancel()
			var out bytes.Buffer
			err := demo(ctx, srv.URL, binding, tenant, &out)
			t.Logf("demo, %s binding, tenant %q:\n%s", binding, tenant, out.String())
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// CheckSQLite runs the checks every example server passes with its tasks and keys in
// a SQLite file, as `go run` starts it; args are the example's further flags. As
// subtests: what it prints and serves ([CheckServer]) and demo once per entry of demos
// against an agent that works for a second ([CheckDemos]); then a restart on the same
// file ([CheckRestart]).
func CheckSQLite(t *testing.T, run RunFunc, args []string, demo Demo, demos ...string) {
	t.Helper()
	t.Run("demos", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "idempotency.db")
		srv := Start(t, run, append([]string{"-store", store, "-delay", "1s"}, args...)...)
		CheckServer(t, srv, "tasks and keys in SQLite file "+store)
		CheckDemos(t, srv, demo, demos...)
	})
	t.Run("restart", func(t *testing.T) {
		CheckRestart(t, run, append([]string{"-store", filepath.Join(t.TempDir(), "idempotency.db"), "-delay", "100ms"}, args...)...)
	})
}

// CheckChecker runs the black-box checker (package servercheck, the checks of
// cmd/a2a-idempotency-check) against srv: its verdict must be pass, every check in
// want must pass on each of the three HTTP interfaces (JSON-RPC, HTTP+JSON, and
// HTTP+JSON with a tenant), and a gRPC interface must be reported as not checked.
// It expects the server's agent to work about 300 ms.
func CheckChecker(t *testing.T, srv *Server, want ...string) {
	t.Helper()
	start := time.Now()
	rep, err := servercheck.Run(context.Background(), srv.URL, servercheck.Options{AgentDelay: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests in %v:\n%s", rep.Requests, time.Since(start).Round(time.Millisecond), rep)
	if !rep.OK() {
		t.Fatalf("verdict %s, want pass", rep.Verdict)
	}
	checked := 0
	for _, iface := range rep.Interfaces {
		if iface.Binding == servercheck.BindingGRPC {
			if r, _ := rep.Result("interface", iface.String()); r.Status != servercheck.NotChecked {
				t.Errorf("gRPC interface %s: %s, want not checked", iface, r.Status)
			}
			continue
		}
		checked++
		for _, id := range want {
			if r, _ := rep.Result(id, iface.String()); r.Status != servercheck.Pass {
				t.Errorf("%s on %s: %s (%s), want pass", id, iface, r.Status, r.Detail)
			}
		}
	}
	if checked != 3 {
		t.Errorf("checked %d interfaces, want JSON-RPC, HTTP+JSON and HTTP+JSON with a tenant", checked)
	}
}

// CheckBadFlags checks that run refuses the flags every example refuses: a -reply
// other than task or message, and an unknown flag.
func CheckBadFlags(t *testing.T, run RunFunc) {
	t.Helper()
	for _, args := range [][]string{
		{"-reply", "task-or-message"},
		{"-no-such-flag"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
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

// CheckNoLeaks starts the server with its keys in PostgreSQL behind a DSN that carries
// a password, given on the command line (as os.Args shows it) and, separately, in
// IDEMPOTENCY_STORE, and checks that its public listener publishes neither the
// password nor the process's debug variables, and that a client that stalls its
// request body is cut off after -read-timeout (issue 14, item 9).
func CheckNoLeaks(t *testing.T, run RunFunc, prefix string) {
	dsn := testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const password = "s3cret-pw" // trust auth on loopback ignores it
	u.User = url.UserPassword(u.User.Username(), password)
	table := testdb.TempTable(t, dsn, prefix)
	tasks := testdb.TempTable(t, dsn, prefix+"_tasks")

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
