package crashtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// Variables of the long form: IDEMPOTENCY_LONG=1 runs 200 kills of 16 keys a store;
// IDEMPOTENCY_CRASH_KILLS sets another number of kills.
const (
	longVar  = "IDEMPOTENCY_LONG"
	killsVar = "IDEMPOTENCY_CRASH_KILLS"
)

// lease is the crash server's lease (the middleware's) and its run lease (a2atasks'):
// a claim left pending by a killed process may be taken over this long after its
// last renewal, and a task it left active is ended this long after its last
// heartbeat. IDEMPOTENCY_CRASH_LEASE sets another (middleware.DefaultLease, say).
var lease = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IDEMPOTENCY_CRASH_LEASE")); err == nil && d > 0 {
		return d
	}
	return time.Second
}()

// slack covers the index clock's rounding (SQLite keeps milliseconds) and the
// retries' polling when the test decides that every lease a key may hold has ended.
const slack = 300 * time.Millisecond

// TestCrash kills the crash server at random points of keyed sends and restarts it on
// the same database, as a server that shares it (the leases decide) and as the sole
// instance (Restarted at start), and checks SPEC §7's promise after crashes: every key
// ran once (its task terminal: COMPLETED, or FAILED because the server stopped while
// it ran) or runs once on its retry; no key is answered TaskNotFound; one task per
// key; a run that started twice started first in a process killed before its task
// was stored.
func TestCrash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL is not available")
	}
	bin := testkit.BuildCommand(t, "github.com/a2akit/idempotency/internal/e2e/crashtest/crashserver")
	for _, kind := range []string{"sqlite", "postgres"} {
		for _, sole := range []bool{false, true} {
			t.Run(fmt.Sprintf("db=%s/sole=%v", kind, sole), func(t *testing.T) {
				var db string
				switch kind {
				case "sqlite":
					if !testdb.SQLiteAvailable() {
						t.Skip("SQLite needs cgo (CGO_ENABLED=1)")
					}
					db = testdb.SQLiteDSN(filepath.Join(t.TempDir(), "kit.db"))
				case "postgres":
					db = testdb.PostgresSchema(t, "kit_crash_")
				}
				kills, budget, clients := 6, 8*time.Second, 6
				if os.Getenv(longVar) != "" {
					kills, budget, clients = 200, 15*time.Minute, 16
				}
				if n, err := strconv.Atoi(os.Getenv(killsVar)); err == nil && n > 0 {
					kills, budget, clients = n, 30*time.Minute, 16
				}
				crash(t, bin, db, sole, kills, budget, clients)
			})
		}
	}
}

// current is the server the clients send to, replaced after each kill.
type current struct {
	mu  sync.Mutex
	url string
	// markers checks every answer with wireclient.MarkerRule.
	markers *wireclient.MarkerRule
}

func (c *current) get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.url
}

func (c *current) set(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.url = url
}

// outcome is what one client saw of its key.
type outcome struct {
	send     wireclient.Send
	trial    int
	answer   wireclient.Answer // the last answer: a terminal task, or what ended the resends
	answered bool
	attempts int
	inFlight int // 409 answers
	errors   int // other error answers (503, a2a-go's internal error when a first save failed)
	problems []string
}

// crash runs trials: in each, clients send a keyed message each to the server, the
// server is killed at a random moment and restarted on the same database, and the
// clients resend until their task is terminal. It then checks the run log and the
// task table.
func crash(t *testing.T, bin, db string, sole bool, trials int, budget time.Duration, clients int) {
	dir := t.TempDir()
	runsPath := filepath.Join(dir, "runs.txt")
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	start := func(name int) *testkit.Command {
		args := []string{"-db", db, "-runs", runsPath, "-name", strconv.Itoa(name), "-lease", lease.String(), "-run-lease", lease.String()}
		if sole {
			args = append(args, "-sole")
		}
		return testkit.StartCommand(t, bin, logs, args...)
	}
	srv := start(0)
	cur := &current{url: srv.URL, markers: wireclient.MarkerRuleOf(t)}

	var all []*outcome
	restarted := map[int]time.Time{} // process name → when it listened
	end := time.Now().Add(budget)
	trial := 0
	for ; trial < trials && time.Now().Before(end); trial++ {
		outs := make([]*outcome, clients)
		var wg sync.WaitGroup
		for i := range outs {
			id := fmt.Sprintf("crash-%d-%d", trial, i)
			outs[i] = &outcome{trial: trial, send: wireclient.Send{
				Binding:   wireclient.Bindings[rand.IntN(2)],
				Streaming: rand.IntN(2) == 0,
				MessageID: id,
				Key:       idempotency.NewKey(),
				Text:      "hello " + id,
			}}
			wg.Go(func() { resend(cur, outs[i]) })
		}
		// Kill at a random point: before, during or after the sends' claims, first
		// saves (with their binds), runs and completions.
		time.Sleep(rand.N(70 * time.Millisecond))
		srv.Kill()
		srv = start(trial + 1)
		restarted[trial+1] = time.Now()
		cur.set(srv.URL)
		wg.Wait()
		all = append(all, outs...)
	}
	check(t, db, runsPath, all, restarted, trial, sole)
	if t.Failed() {
		if b, err := os.ReadFile(logs.Name()); err == nil {
			t.Logf("server log (last 8 KiB):\n%s", b[max(0, len(b)-8192):])
		}
	}
}

// runLine is one line of the run file.
type runLine struct {
	process int
	at      time.Time
}

// check checks what the clients saw, the run log and the task table, and logs the
// figures.
func check(t *testing.T, db, runsPath string, all []*outcome, restarted map[int]time.Time, kills int, sole bool) {
	runs := readRuns(t, runsPath)
	tasks := taskCounts(t, db)
	kinds := map[string]int{}
	perKey := map[int]int{}       // runs started → keys
	killPoint := map[string]int{} // what the killed process had done for the key
	var inFlight, errAnswers int
	var toRun []time.Duration // restart → first run of a key its killed predecessor did not finish
	for _, o := range all {
		id := o.send.MessageID
		rs := runs[id]
		perKey[len(rs)]++
		for _, p := range o.problems {
			t.Errorf("message %s (%s, streaming %t): %s", id, o.send.Binding, o.send.Streaming, p)
		}
		inFlight += o.inFlight
		errAnswers += o.errors
		if !o.answered {
			t.Errorf("message %s (%s, streaming %t): no terminal answer after %d attempts (last %v)", id, o.send.Binding, o.send.Streaming, o.attempts, o.answer)
			continue
		}
		state := o.answer.State
		if o.answer.Kind == wireclient.Task && state == "TASK_STATE_FAILED" {
			state += " (server stopped)"
		}
		kinds[o.answer.Kind.String()+" "+state]++
		switch {
		case o.answer.Kind == wireclient.TaskNotFound:
			t.Errorf("message %s: answered TaskNotFound (runs %d)", id, len(rs))
		case o.answer.Kind != wireclient.Task:
			t.Errorf("message %s: answered %v, want a task", id, o.answer)
		case len(rs) == 0:
			t.Errorf("message %s: answered with task %s, but the run log has no run", id, o.answer.TaskID)
		}
		if n := tasks[id]; n != 1 && o.answer.Kind == wireclient.Task {
			t.Errorf("message %s: %d tasks stored, want 1", id, n)
		}
		// Every run but the last started in a process that was killed (each process
		// is killed once, at the end of its trial) before its task was stored, and
		// never twice in one process.
		for i := 1; i < len(rs); i++ {
			if rs[i].process == rs[i-1].process {
				t.Errorf("message %s: ran twice in process %d", id, rs[i].process)
			}
		}
		killed := o.trial // the process killed in the key's trial
		switch {
		case len(rs) == 0:
		case rs[0].process != killed:
			killPoint["before the run"]++
		case len(rs) > 1:
			killPoint["run started, task not stored"]++
			if os.Getenv("CRASH_DEBUG") != "" {
				t.Logf("%s: runs %v answer %v %.400s", id, rs, o.answer, o.answer.Raw)
			}
		case state == "TASK_STATE_COMPLETED":
			killPoint["after completion"]++
		default:
			killPoint["task stored, run cut"]++
		}
		if len(rs) > 0 && rs[len(rs)-1].process == killed+1 {
			if at, ok := restarted[killed+1]; ok {
				toRun = append(toRun, max(0, rs[len(rs)-1].at.Sub(at)))
			}
		}
	}
	for id, n := range tasks {
		if n > 1 {
			t.Errorf("message %s: %d tasks stored", id, n)
		}
	}
	slices.Sort(toRun)
	q := func(p float64) time.Duration {
		if len(toRun) == 0 {
			return 0
		}
		return toRun[int(p*float64(len(toRun)-1))].Round(time.Millisecond)
	}
	t.Logf("%d keys over %d kills (sole %v): answers %v; runs started per key %v; kill points %v; "+
		"restart to the first run of an unfinished key (%d keys): median %v, p99 %v, max %v; %d answers 409 and %d other errors on the way (lease %v)",
		len(all), kills, sole, kinds, perKey, killPoint, len(toRun), q(0.5), q(0.99), q(1), inFlight, errAnswers, lease)
}

// readRuns reads the run file: the runs of each message id, in order.
func readRuns(t *testing.T, path string) map[string][]runLine {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]runLine{}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // empty, or cut by a kill
		}
		p, err1 := strconv.Atoi(f[1])
		ns, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		runs[f[0]] = append(runs[f[0]], runLine{process: p, at: time.Unix(0, ns)})
	}
	return runs
}

// taskCounts reads the task table: how many tasks hold each message id in their
// history.
func taskCounts(t *testing.T, dsn string) map[string]int {
	db, err := testdb.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT task FROM a2a_tasks`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			t.Fatal(err)
		}
		var task struct {
			History []struct {
				MessageID string `json:"messageId"`
			} `json:"history"`
		}
		if err := json.Unmarshal(body, &task); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range task.History {
			if strings.HasPrefix(m.MessageID, "crash-") && !seen[m.MessageID] {
				seen[m.MessageID] = true
				counts[m.MessageID]++
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// resend sends o's message until it is answered with a terminal task (or anything
// but a task, 409 or a failed attempt), and checks every 409 against the leases the
// key may hold. A task that is not terminal is asked again, unary, until it is.
func resend(cur *current, o *outcome) {
	deadline := time.Now().Add(6*lease + 30*time.Second)
	// uncertainSince is when the client last learnt that an attempt failed without an
	// answer: any claim that attempt made was made or renewed before, so its lease
	// ends before uncertainSince + lease.
	var uncertainSince time.Time
	s := o.send
	for time.Now().Before(deadline) {
		o.attempts++
		c := &wireclient.Client{BaseURL: cur.get()}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		a, err := c.Do(ctx, s)
		cancel()
		if err == nil {
			cur.markers.Check(s.Key, a)
		}
		switch {
		case err != nil:
			uncertainSince = time.Now()
		case a.Kind == wireclient.Unavailable, a.Kind == wireclient.Refused:
			// An attempt that failed after it may have claimed the key (a store failure,
			// a2a-go's internal error): uncertain, as a client would take a 5xx.
			o.errors++
			uncertainSince = time.Now()
		case a.Kind == wireclient.Task && terminal(a.State):
			o.answer, o.answered = a, true
			if a.State == "TASK_STATE_FAILED" && !bytes.Contains(a.Raw, []byte("server stopped")) {
				o.problems = append(o.problems, fmt.Sprintf("task failed without saying the server stopped: %.300s", a.Raw))
			}
			return
		case a.Kind == wireclient.Task:
			o.answer = a
			s.Streaming = false // ask for the task as it is now
		case a.Kind == wireclient.InFlight:
			o.inFlight++
			if !uncertainSince.IsZero() && sent.After(uncertainSince.Add(lease+slack)) {
				o.problems = append(o.problems, fmt.Sprintf("answered 409 %v after every lease it may hold had ended", sent.Sub(uncertainSince)))
			}
			if a.RetryAfter <= 0 || a.RetryAfter > lease+time.Second {
				o.problems = append(o.problems, fmt.Sprintf("409 with Retry-After %v (lease %v)", a.RetryAfter, lease))
			}
		default:
			o.answer, o.answered = a, true
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func terminal(state string) bool {
	switch state {
	case "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED":
		return true
	}
	return false
}
