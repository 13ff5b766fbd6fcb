package crashtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// longVar selects the long form: IDEMPOTENCY_LONG=1.
const longVar = "IDEMPOTENCY_LONG"

// lease is the crash server's lease: a claim left pending by a killed process may be
// taken over this long after it was made.
const lease = time.Second

// slack covers the index clock's rounding (SQLite keeps milliseconds) when the test
// decides that every lease a key may hold has ended.
const slack = 250 * time.Millisecond

func TestCrash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL is not available")
	}
	bin := testkit.BuildCommand(t, "github.com/a2akit/idempotency/internal/e2e/crashtest/crashserver")
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run("index="+kind, func(t *testing.T) {
			var store, table string
			switch kind {
			case "sqlite":
				if !testdb.SQLiteAvailable() {
					t.Skip("SQLite needs cgo (CGO_ENABLED=1)")
				}
				store = filepath.Join(t.TempDir(), "keys.db")
			case "postgres":
				store = testkit.PostgresDSN(t)
				table = testkit.RandomName("kit_crash_")
				t.Cleanup(func() {
					ix, err := testdb.Open(context.Background(), store, table, 1)
					if err != nil {
						t.Errorf("drop %s: %v", table, err)
						return
					}
					defer ix.Close()
					if err := ix.Drop(context.Background()); err != nil {
						t.Errorf("drop %s: %v", table, err)
					}
				})
			}
			trials, budget, clients := 8, 8*time.Second, 6
			if os.Getenv(longVar) != "" {
				trials, budget, clients = 200, 10*time.Minute, 16
			}
			crash(t, bin, store, table, trials, budget, clients)
		})
	}
}

// current is the server the clients send to, replaced after each kill.
type current struct {
	mu  sync.Mutex
	url string
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
	answer   wireclient.Answer
	answered bool
	attempts int
	inFlight int // 409 answers
	problems []string
}

// crash runs trials: in each, clients send a keyed message each to the server, the
// server is killed at a random moment and restarted on the same store, and the clients
// resend until answered. It then checks the run log.
func crash(t *testing.T, bin, store, table string, trials int, budget time.Duration, clients int) {
	dir := t.TempDir()
	runsPath := filepath.Join(dir, "runs.txt")
	logs, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	args := []string{"-store", store, "-runs", runsPath, "-lease", lease.String()}
	if table != "" {
		args = append(args, "-table", table)
	}
	srv := testkit.StartCommand(t, bin, logs, args...)
	cur := &current{url: srv.URL}

	var all []*outcome
	var kills int
	end := time.Now().Add(budget)
	for trial := 0; trial < trials && time.Now().Before(end); trial++ {
		outs := make([]*outcome, clients)
		var wg sync.WaitGroup
		for i := range outs {
			id := fmt.Sprintf("crash-%d-%d", trial, i)
			outs[i] = &outcome{send: wireclient.Send{
				Binding:   wireclient.Bindings[rand.IntN(2)],
				Streaming: rand.IntN(2) == 0,
				MessageID: id,
				Key:       idempotency.NewKey(),
				Text:      "hello " + id,
			}}
			wg.Go(func() { resend(cur, outs[i]) })
		}
		// Kill at a random point: before, during or after the sends' claims, binds,
		// runs and answers.
		time.Sleep(rand.N(60 * time.Millisecond))
		srv.Kill()
		kills++
		srv = testkit.StartCommand(t, bin, logs, args...)
		cur.set(srv.URL)
		wg.Wait()
		all = append(all, outs...)
	}

	// The run log: one line per run, written before the agent did anything.
	runs, _, err := testkit.ReadRunFile(runsPath)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	inFlight, lostBeforeRun := 0, 0
	for _, o := range all {
		id := o.send.MessageID
		if n := runs[id]; n > 1 {
			t.Errorf("message %s (%s, streaming %t): the agent ran %d times", id, o.send.Binding, o.send.Streaming, n)
		}
		for _, p := range o.problems {
			t.Errorf("message %s (%s, streaming %t): %s", id, o.send.Binding, o.send.Streaming, p)
		}
		if !o.answered {
			t.Errorf("message %s (%s, streaming %t): not answered after %d attempts", id, o.send.Binding, o.send.Streaming, o.attempts)
			continue
		}
		kinds[o.answer.Kind.String()]++
		inFlight += o.inFlight
		switch {
		case o.answer.Kind == wireclient.Task && runs[id] != 1:
			t.Errorf("message %s: answered with task %s, but the run log has %d runs", id, o.answer.TaskID, runs[id])
		case o.answer.Kind == wireclient.TaskNotFound && runs[id] == 0:
			lostBeforeRun++
		}
	}
	// A key answered TaskNotFound was bound to its task id (the adapter binds before
	// the agent runs) by a process killed before a2a-go's in-memory task store could
	// keep the task; the agent ran in that process or not at all.
	t.Logf("%d keys over %d kills: answers %v (%d of the task-not-found keys never ran), %d runs logged, "+
		"%d answers 409 on the way (lease %v)", len(all), kills, kinds, lostBeforeRun, len(runs), inFlight, lease)
	if t.Failed() {
		if b, err := os.ReadFile(logs.Name()); err == nil {
			t.Logf("server log:\n%s", b)
		}
	}
}

// resend sends o's message until it is answered with a task, a Message or
// TaskNotFound (the task was lost with the process that ran it: a2a-go's task store is
// in memory), and checks every 409 against the leases the key may hold.
func resend(cur *current, o *outcome) {
	deadline := time.Now().Add(4*lease + 30*time.Second)
	// uncertainSince is when the client last learnt that an attempt failed without an
	// answer: any claim that attempt made was made before, so its lease ends before
	// uncertainSince + lease.
	var uncertainSince time.Time
	for time.Now().Before(deadline) {
		o.attempts++
		c := &wireclient.Client{BaseURL: cur.get()}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		a, err := c.Do(ctx, o.send)
		cancel()
		wait := 20 * time.Millisecond
		switch {
		case err != nil:
			uncertainSince = time.Now()
		case a.Kind == wireclient.Task, a.Kind == wireclient.Message, a.Kind == wireclient.TaskNotFound:
			o.answer, o.answered = a, true
			return
		case a.Kind == wireclient.Unavailable:
			uncertainSince = time.Now()
		case a.Kind == wireclient.InFlight:
			o.inFlight++
			if !uncertainSince.IsZero() && sent.After(uncertainSince.Add(lease+slack)) {
				o.problems = append(o.problems, fmt.Sprintf("answered 409 %v after every lease it may hold had ended", sent.Sub(uncertainSince)))
			}
			if a.RetryAfter <= 0 || a.RetryAfter > lease+time.Second {
				o.problems = append(o.problems, fmt.Sprintf("409 with Retry-After %v (lease %v)", a.RetryAfter, lease))
			}
		default:
			o.problems = append(o.problems, fmt.Sprintf("unexpected answer %v: %.300s", a, a.Raw))
			return
		}
		time.Sleep(wait)
	}
}
