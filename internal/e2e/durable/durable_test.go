package durable_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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
// its agent runs and restarted on the file, then killed again and restarted as the
// sole instance. What a retry of a send from before a kill gets:
//
//   - the send's task stored, its run cut: the task (WORKING) while the run's
//     liveness lasts, then the same task FAILED with a status message saying the
//     server stopped; a sole instance ends it at once when it starts;
//   - killed before the task was stored (the agent held its first event): 409 with a
//     Retry-After within the lease while the dead claim's lease lasts, then the
//     retry runs the agent; a sole instance ends those leases when it starts, and
//     the first retry runs it at once, however many retries come at once.
//
// Never TaskNotFound; one task per send; a send whose task was stored ran once.
func TestRestart(t *testing.T) {
	if !testdb.SQLiteAvailable() {
		t.Skip("SQLite needs cgo (CGO_ENABLED=1)")
	}
	bin := testkit.BuildCommand(t, serverPkg)
	dir := t.TempDir()
	path := filepath.Join(dir, "kit.db")
	runs, logs := filepath.Join(dir, "runs.txt"), serverLog(t)
	const lease, runLease = 6 * time.Second, 2 * time.Second
	args := func(extra ...string) []string {
		return append([]string{"-db", path, "-runs", runs, "-lease", lease.String(), "-run-lease", runLease.String(),
			"-work", "20ms", "-hold", "20ms", "-sweep", "100ms"}, extra...)
	}

	// Mid-run: the agent reports WORKING and works for a minute; the first attempts'
	// clients leave after the first event. The held sends' agents wait before their
	// first event.
	s1 := testkit.StartCommand(t, bin, logs, args("-hold", "1m")...)
	tasks := map[string]string{} // message id → task id
	working := startWorking(t, s1.URL, "working", 12, tasks)
	held := startHeld(t, s1.URL, "held", 4)
	waitHeld(t, path, held)
	s1.Kill()
	killed := time.Now()

	// Restarted as a server that does not know it is alone.
	s2 := testkit.StartCommand(t, bin, logs, args()...)
	for _, s := range retries(working) {
		a := do(t, s2.URL, s)
		if a.Kind != wireclient.Task || a.TaskID != tasks[s.MessageID] || a.State != "TASK_STATE_WORKING" && a.State != "TASK_STATE_FAILED" {
			t.Errorf("retry of %s (streaming %v) after the restart: %v in state %s, want task %s WORKING (or FAILED)", s.MessageID, s.Streaming, a, a.State, tasks[s.MessageID])
		}
	}
	for _, s := range held {
		if time.Since(killed) > lease-time.Second {
			break
		}
		a := do(t, s2.URL, s)
		if time.Since(killed) < lease-time.Second && (a.Kind != wireclient.InFlight || a.RetryAfter <= 0 || a.RetryAfter > lease) {
			t.Errorf("retry of %s within the lease: %v (Retry-After %v), want 409 with a Retry-After within the lease", s.MessageID, a, a.RetryAfter)
		}
	}
	time.Sleep(time.Until(killed.Add(runLease + 500*time.Millisecond)))
	for _, s := range retries(working) {
		checkStopped(t, s2.URL, s, tasks[s.MessageID])
	}
	time.Sleep(time.Until(killed.Add(lease + 500*time.Millisecond)))
	for _, s := range held {
		a := do(t, s2.URL, s)
		if a.Kind != wireclient.Task || a.State != "TASK_STATE_COMPLETED" {
			t.Errorf("retry of %s after the lease: %v in state %s, want the agent run, its task completed", s.MessageID, a, a.State)
		}
		tasks[s.MessageID] = a.TaskID
	}

	// After completion, and mid-run again, on a sole instance.
	var done []wireclient.Send
	for i := range 8 {
		s := send(wireclient.Bindings[i%2], fmt.Sprintf("done-%d", i), "work")
		a := do(t, s2.URL, s)
		if a.Kind != wireclient.Task || a.State != "TASK_STATE_COMPLETED" {
			t.Fatalf("first send %s: %v in state %s, want a completed task", s.MessageID, a, a.State)
		}
		tasks[s.MessageID] = a.TaskID
		done = append(done, s)
	}
	s2.Kill()
	s3 := testkit.StartCommand(t, bin, logs, args("-sole", "-hold", "1m")...)
	soleWorking := startWorking(t, s3.URL, "soleworking", 4, tasks)
	soleHeld := startHeld(t, s3.URL, "soleheld", 4)
	waitHeld(t, path, soleHeld)
	s3.Kill()

	// Restarted as the sole server on the file: every retry is answered at once, none
	// with 409: the cut runs' tasks FAILED, the held sends run once.
	s4 := testkit.StartCommand(t, bin, logs, args("-sole")...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]map[string]int{} // message id → answer → count
	for range 4 {
		for _, s := range append(retries(append(append(done, working...), soleWorking...)), soleHeld...) {
			wg.Go(func() {
				a := do(t, s4.URL, s)
				mu.Lock()
				defer mu.Unlock()
				if answers[s.MessageID] == nil {
					answers[s.MessageID] = map[string]int{}
				}
				answers[s.MessageID][a.String()+" "+a.State]++
			})
		}
	}
	wg.Wait()
	for id, got := range answers {
		// The held sends run on the first retry; the others get the task while it runs.
		want := []string{"TASK_STATE_FAILED"}
		switch {
		case strings.HasPrefix(id, "done"):
			want = []string{"TASK_STATE_COMPLETED"}
		case strings.HasPrefix(id, "soleheld"):
			want = []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}
		}
		ids := map[string]bool{}
		for ans := range got {
			f := strings.Fields(ans) // task <id> <state>
			if len(f) != 3 || f[0] != "task" || !slices.Contains(want, f[2]) {
				t.Errorf("retries of %s on the restarted sole server: %v, want one task in %v", id, got, want)
				break
			}
			ids[f[1]] = true
		}
		if len(ids) > 1 {
			t.Errorf("retries of %s on the restarted sole server named %d tasks: %v", id, len(ids), got)
		}
	}
	for _, s := range append(soleWorking, working...) {
		checkStopped(t, s4.URL, s, tasks[s.MessageID])
	}
	checkRuns(t, runs, append(append(working, done...), soleWorking...), 1)
	checkRuns(t, runs, append(held, soleHeld...), 2)
	t.Logf("after the last restart: retries answered %v", answers)
}

// startWorking starts n sends of message ids prefix-i whose agents report WORKING and
// then work for a minute; the clients leave after the first event. It records their
// task ids.
func startWorking(t *testing.T, base, prefix string, n int, tasks map[string]string) []wireclient.Send {
	t.Helper()
	var out []wireclient.Send
	for i := range n {
		s := send(wireclient.Bindings[i%2], fmt.Sprintf("%s-%d", prefix, i), "wait 1m work")
		s.Streaming, s.StopAfterFirstEvent = true, true
		a := do(t, base, s)
		if a.Kind != wireclient.Task {
			t.Fatalf("first send %s: %v", s.MessageID, a)
		}
		tasks[s.MessageID] = a.TaskID
		out = append(out, s)
	}
	return out
}

// startHeld starts n sends of message ids prefix-i whose agents hold their first
// event, and forgets their answers: the server is killed before it answers.
func startHeld(t *testing.T, base, prefix string, n int) []wireclient.Send {
	var out []wireclient.Send
	for i := range n {
		s := send(wireclient.JSONRPC, fmt.Sprintf("%s-%d", prefix, i), "hold")
		fire(t, base, s)
		out = append(out, s)
	}
	return out
}

// checkStopped checks that a retry of s gets task taskID FAILED, with the status
// message saying that the server stopped.
func checkStopped(t *testing.T, base string, s wireclient.Send, taskID string) {
	t.Helper()
	s.Streaming, s.StopAfterFirstEvent = false, false
	a := do(t, base, s)
	if a.Kind != wireclient.Task || a.TaskID != taskID || a.State != "TASK_STATE_FAILED" || !strings.Contains(string(a.Raw), "server stopped") {
		t.Errorf("retry of %s once its run's liveness ended: %v in state %s (%.300s), want task %s FAILED, the server stopped", s.MessageID, a, a.State, a.Raw, taskID)
	}
}

// TestReplicas: two server processes on one PostgreSQL schema behind a round-robin
// proxy. A retry that lands on the replica that does not run the agent gets the task
// (WORKING while it runs, COMPLETED after), and 64 concurrent identical sends spread
// over both replicas run the agent once.
func TestReplicas(t *testing.T) {
	dsn := testdb.PostgresSchema(t, "kit_durable_")
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
		checkRuns(t, runs, []wireclient.Send{first}, 1)
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
	checkRuns(t, runs, []wireclient.Send{same}, 1)
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
	} else {
		wireclient.MarkerRuleOf(t).Check(s.Key, a)
	}
	return a
}

// waitHeld waits until every send's key is claimed, and its agent started, in the
// SQLite file, with its task not stored.
func waitHeld(t *testing.T, path string, sends []wireclient.Send) {
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
			if found && !rec.Pending() {
				t.Fatalf("the key of %s is bound to %q while its agent holds its first event", s.MessageID, rec.TaskID)
			}
			if found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the key of %s was not claimed within 10s", s.MessageID)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // the claims' agents start
}

// checkRuns checks that the run file records n runs of each send.
func checkRuns(t *testing.T, path string, sends []wireclient.Send, n int) {
	t.Helper()
	runs, by, err := testkit.ReadRunFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sends {
		if runs[s.MessageID] != n {
			t.Errorf("the agent started %d times for %s (on %v), want %d", runs[s.MessageID], s.MessageID, by[s.MessageID], n)
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

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}
