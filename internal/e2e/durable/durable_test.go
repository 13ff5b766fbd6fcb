package durable_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

const serverPkg = "github.com/a2akit/idempotency/internal/e2e/durable/durableserver"

// TestRestart: a server with its tasks and keys in one SQLite file is killed while
// its agent runs and restarted on the file, then stopped after its tasks completed and
// restarted again. Every retry of a send from before a restart gets the send's task,
// as it is now (WORKING for the runs the kill cut, COMPLETED for the others), never
// 409; a key bound to a task that was never stored (the kill came before the agent's
// first event) gets TaskNotFound from a -sole server at once, and 409 from a server
// that cannot know that no replica runs it only until the lease ends. The agent ran
// once per message.
func TestRestart(t *testing.T) {
	if !testdb.SQLiteAvailable() {
		t.Skip("SQLite needs cgo (CGO_ENABLED=1)")
	}
	bin := testkit.BuildCommand(t, serverPkg)
	dir := t.TempDir()
	runs, logs := filepath.Join(dir, "runs.txt"), serverLog(t)
	const lease = 6 * time.Second
	args := func(work time.Duration, extra ...string) []string {
		return append([]string{"-db", filepath.Join(dir, "kit.db"), "-runs", runs, "-lease", lease.String(),
			"-work", work.String(), "-sweep", "100ms"}, extra...)
	}

	// Mid-run: the agent reports WORKING and works for a minute; the first attempts'
	// clients leave after the first event.
	s1 := testkit.StartCommand(t, bin, logs, args(time.Minute)...)
	var working, held []wireclient.Send
	tasks := map[string]string{} // message id → task id
	for i := range 12 {
		s := send(wireclient.JSONRPC, fmt.Sprintf("working-%d", i), "work")
		if i%2 == 1 {
			s.Binding = wireclient.HTTPJSON
		}
		s.Streaming, s.StopAfterFirstEvent = true, true
		a := do(t, s1.URL, s)
		if a.Kind != wireclient.Task {
			t.Fatalf("first send %s: %v", s.MessageID, a)
		}
		tasks[s.MessageID] = a.TaskID
		working = append(working, s)
	}
	for i := range 4 {
		s := send(wireclient.JSONRPC, fmt.Sprintf("held-%d", i), "hold")
		s.Streaming, s.StopAfterFirstEvent = true, true
		fire(t, s1.URL, s) // answers nothing before the kill: the agent holds its first event
		held = append(held, s)
	}
	waitBound(t, filepath.Join(dir, "kit.db"), append(held, working...))
	claimed := time.Now() // the held keys were claimed before this
	s1.Kill()

	// Restarted as a server that does not know it is alone: the working tasks are
	// answered at once; the held keys get 409 until the lease ends, then TaskNotFound.
	s2 := testkit.StartCommand(t, bin, logs, args(time.Minute)...)
	for _, s := range retries(working) {
		a := do(t, s2.URL, s)
		if a.Kind != wireclient.Task || a.TaskID != tasks[s.MessageID] || a.State != "TASK_STATE_WORKING" {
			t.Errorf("retry of %s (streaming %v) after the restart: %v in state %s, want task %s WORKING", s.MessageID, s.Streaming, a, a.State, tasks[s.MessageID])
		}
	}
	for _, s := range held {
		s.StopAfterFirstEvent = false
		a := do(t, s2.URL, s)
		if time.Since(claimed) < lease-time.Second && (a.Kind != wireclient.InFlight || a.RetryAfter <= 0 || a.RetryAfter > lease) {
			t.Errorf("retry of %s within the lease: %v (Retry-After %v), want 409 with a Retry-After within the lease", s.MessageID, a, a.RetryAfter)
		}
	}
	time.Sleep(time.Until(claimed.Add(lease + 250*time.Millisecond)))
	for _, s := range held {
		s.StopAfterFirstEvent = false
		if a := do(t, s2.URL, s); a.Kind != wireclient.TaskNotFound {
			t.Errorf("retry of %s after the lease: %v, want TaskNotFound", s.MessageID, a)
		}
	}
	s2.Kill()

	// After completion: the agent works briefly; the first attempts wait for the end.
	s3 := testkit.StartCommand(t, bin, logs, args(20*time.Millisecond, "-sole")...)
	var done []wireclient.Send
	for i := range 8 {
		s := send(wireclient.Bindings[i%2], fmt.Sprintf("done-%d", i), "work")
		a := do(t, s3.URL, s)
		if a.Kind != wireclient.Task || a.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("first send %s: %v in state %s, want a completed task", s.MessageID, a, a.State)
		}
		tasks[s.MessageID] = a.TaskID
		done = append(done, s)
	}
	// And keys bound, their tasks never stored, killed within the lease.
	var sole []wireclient.Send
	for i := range 4 {
		s := send(wireclient.HTTPJSON, fmt.Sprintf("sole-%d", i), "hold")
		s.Streaming, s.StopAfterFirstEvent = true, true
		fire(t, s3.URL, s)
		sole = append(sole, s)
	}
	waitBound(t, filepath.Join(dir, "kit.db"), sole)
	s3.Kill()

	// Restarted as the sole server on the file: every retry is answered at once, none
	// with 409.
	s4 := testkit.StartCommand(t, bin, logs, args(20*time.Millisecond, "-sole")...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var storm int
	for round := range 4 {
		for _, s := range retries(append(done, working...)) {
			wg.Go(func() {
				a := do(t, s4.URL, s)
				want := "TASK_STATE_COMPLETED"
				if strings.HasPrefix(s.MessageID, "working") {
					want = "TASK_STATE_WORKING"
				}
				if a.Kind != wireclient.Task || a.TaskID != tasks[s.MessageID] || a.State != want {
					mu.Lock()
					storm++
					mu.Unlock()
					t.Errorf("round %d: retry of %s (streaming %v): %v in state %s, want task %s %s", round, s.MessageID, s.Streaming, a, a.State, tasks[s.MessageID], want)
				}
			})
		}
		for _, s := range sole {
			s.StopAfterFirstEvent = false
			wg.Go(func() {
				if a := do(t, s4.URL, s); a.Kind != wireclient.TaskNotFound {
					t.Errorf("round %d: retry of %s on the sole server: %v, want TaskNotFound at once", round, s.MessageID, a)
				}
			})
		}
	}
	wg.Wait()
	checkRuns(t, runs, append(append(append(working, held...), done...), sole...))
	t.Logf("after the last restart: %d retries of %d sends answered with their tasks and %d with TaskNotFound, %d otherwise",
		4*2*(len(done)+len(working)), len(done)+len(working), 4*len(sole), storm)
}

// TestReplicas: two server processes on one PostgreSQL schema behind a round-robin
// proxy. A retry that lands on the replica that does not run the agent gets the task
// (WORKING while it runs, COMPLETED after), and 64 concurrent identical sends spread
// over both replicas run the agent once.
func TestReplicas(t *testing.T) {
	dsn := postgresSchema(t)
	bin := testkit.BuildCommand(t, serverPkg)
	runs, logs := filepath.Join(t.TempDir(), "runs.txt"), serverLog(t)
	start := func(name string) *testkit.Command {
		return testkit.StartCommand(t, bin, logs, "-db", dsn, "-runs", runs, "-name", name, "-work", "1500ms", "-replay-wait", "2s")
	}
	a, b := start("a"), start("b")
	proxy := roundRobin(t, a.URL, b.URL)

	for _, binding := range wireclient.Bindings {
		first := send(binding, "long-"+string(binding[:4]), "work")
		first.Streaming, first.StopAfterFirstEvent = true, true
		fa := do(t, proxy, first)
		if fa.Kind != wireclient.Task {
			t.Fatalf("first send: %v", fa)
		}
		runner := fa.Header.Get("X-Replica")
		states := map[string]bool{}
		deadline := time.Now().Add(10 * time.Second)
		for !states["TASK_STATE_COMPLETED"] && time.Now().Before(deadline) {
			for _, r := range retries([]wireclient.Send{first}) {
				ra := do(t, proxy, r)
				if ra.Kind != wireclient.Task || ra.TaskID != fa.TaskID {
					t.Fatalf("retry on replica %s: %v, want task %s", ra.Header.Get("X-Replica"), ra, fa.TaskID)
				}
				if ra.Header.Get("X-Replica") != runner && !r.Streaming {
					states[ra.State] = true
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !states["TASK_STATE_WORKING"] || !states["TASK_STATE_COMPLETED"] {
			t.Errorf("%s: the replica not running the agent answered states %v, want WORKING, then COMPLETED", binding, states)
		}
		checkRuns(t, runs, []wireclient.Send{first})
	}

	// 64 identical sends at once, alternating between the replicas.
	same := send(wireclient.JSONRPC, "storm", "work")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids, replicas := map[string]int{}, map[string]int{}
	for i := range 64 {
		s := same
		s.Binding = wireclient.Bindings[i/2%2]
		wg.Go(func() {
			ans := do(t, proxy, s)
			mu.Lock()
			defer mu.Unlock()
			ids[ans.String()]++
			replicas[ans.Header.Get("X-Replica")]++
		})
	}
	wg.Wait()
	if len(ids) != 1 || !strings.HasPrefix(firstKey(ids), "task ") {
		t.Errorf("64 identical sends were answered %v, want one task", ids)
	}
	if replicas["a"] == 0 || replicas["b"] == 0 {
		t.Errorf("answers by replica: %v, want both", replicas)
	}
	t.Logf("64 identical sends: answers %v, by replica %v", ids, replicas)
	checkRuns(t, runs, []wireclient.Send{same})
}

// send returns a keyed unary send of text whose key is derived from the message id
// (distinct per test run) .
func send(b wireclient.Binding, messageID, text string) wireclient.Send {
	return wireclient.Send{Binding: b, MessageID: messageID + "-" + runID, Key: "key-" + messageID + "-" + runID, Text: text}
}

// runID keeps the keys of one run of the tests apart from another's.
var runID = testkit.RandomName("")

// fire sends s to base in the background and forgets the answer: the server is
// killed before it answers.
func fire(t *testing.T, base string, s wireclient.Send) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go (&wireclient.Client{BaseURL: base}).Do(ctx, s)
}

// serverLog returns a file for the servers' logs, written to the test log when the
// test fails.
func serverLog(t *testing.T) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), "servers.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(f.Name()); err == nil {
				t.Logf("server logs:\n%s", b)
			}
		}
		f.Close()
	})
	return f
}

// retries returns, for every send, a unary and a streaming retry of it.
func retries(sends []wireclient.Send) []wireclient.Send {
	var out []wireclient.Send
	for _, s := range sends {
		s.StopAfterFirstEvent = true
		s.Streaming = false
		out = append(out, s)
		s.Streaming = true
		out = append(out, s)
	}
	return out
}

// do sends s to base and returns the answer, failing t when none could be read.
func do(t *testing.T, base string, s wireclient.Send) wireclient.Answer {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := (&wireclient.Client{BaseURL: base}).Do(ctx, s)
	if err != nil {
		t.Errorf("send %s: %v", s.MessageID, err)
	}
	return a
}

// waitBound waits until every send's key is bound to a task in the SQLite file.
func waitBound(t *testing.T, path string, sends []wireclient.Send) {
	t.Helper()
	ix, err := testdb.Open(context.Background(), testdb.SQLiteDSN(path), "", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range sends {
		for {
			rec, found, err := ix.Lookup(context.Background(), "", s.Key)
			if err != nil {
				t.Fatal(err)
			}
			if found && rec.TaskID != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the key of %s was not bound within 10s", s.MessageID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// checkRuns checks that the run file records exactly one run of each send.
func checkRuns(t *testing.T, path string, sends []wireclient.Send) {
	t.Helper()
	runs, by, err := testkit.ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sends {
		if runs[s.MessageID] != 1 {
			t.Errorf("the agent ran %d times for %s (on %v), want once", runs[s.MessageID], s.MessageID, by[s.MessageID])
		}
	}
}

// roundRobin starts a reverse proxy that sends each request to the next of upstreams
// in turn, and returns its base URL.
func roundRobin(t *testing.T, upstreams ...string) string {
	var urls []*url.URL
	for _, u := range upstreams {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, p)
	}
	var n atomic.Int64
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(urls[(n.Add(1)-1)%int64(len(urls))])
		},
		FlushInterval: -1,
	})
	t.Cleanup(srv.Close)
	return srv.URL
}

// postgresSchema returns the DSN of IDEMPOTENCY_POSTGRES_DSN with a fresh schema as
// its search_path, dropped when the test ends.
func postgresSchema(t *testing.T) string {
	t.Helper()
	dsn := testkit.PostgresDSN(t)
	db, err := testdb.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	schema := testkit.RandomName("kit_durable_")
	if _, err := db.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", testkit.PostgresDSNVar, err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec(`DROP SCHEMA "` + schema + `" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}
