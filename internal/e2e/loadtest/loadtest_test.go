package loadtest_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/e2e/loadtest"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/middleware"
)

// longVar selects the long form of the load checks: IDEMPOTENCY_LONG=1.
const longVar = "IDEMPOTENCY_LONG"

func long() bool { return os.Getenv(longVar) != "" }

// serve starts an echo server behind the kit on an index of kind, with a lease short
// enough that claims left pending by dropped sends end within the settle phase.
//
// Not shorter: the middleware answers a retry whose task is not stored yet with
// TaskNotFound, instead of waiting, once the key's claim is older than the lease, and
// under the long form's load on PostgreSQL a task's first save came more than a second
// after its claim (the check that no key is also answered TaskNotFound caught it).
func serve(t *testing.T, kind string, delay time.Duration) *testkit.Running {
	t.Helper()
	ix := testdb.ForTest(t, kind, 32)
	return testkit.NewServer(t, testkit.Config{Agent: testkit.Echo(delay),
		Index:      ix,
		Middleware: middleware.Options{Lease: 5 * time.Second},
	})
}

func report(t *testing.T, rep *loadtest.Report) {
	t.Helper()
	t.Log("\n" + rep.String())
	if !rep.OK() {
		t.Fatalf("%d violations", len(rep.Violations))
	}
}

// Many clients, duplicates racing their first send, conflicts and dropped sends on
// both bindings, unary and streaming: every key runs the agent exactly once.
func TestLoad(t *testing.T) {
	for _, kind := range testdb.Kinds {
		t.Run("index="+kind, func(t *testing.T) {
			srv := serve(t, kind, 2*time.Millisecond)
			cfg := loadtest.Config{BaseURL: srv.URL, Clients: 16, Requests: 600, Duration: 5 * time.Second,
				Replies: 0.1, Settle: 20 * time.Second}
			if long() {
				cfg.Clients, cfg.Requests, cfg.Duration, cfg.Settle = 64, 50000, 2*time.Minute, time.Minute
			}
			rep, err := loadtest.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			report(t, rep)
			if rep.Unsettled > 0 || rep.NotFound > 0 {
				t.Errorf("%d keys unsettled and %d answered task-not-found; want every key answered", rep.Unsettled, rep.NotFound)
			}
			if rep.Answers["already-held"] == 0 || rep.Answers["dropped"] == 0 {
				t.Errorf("the load had no conflicts or no drops: %v", rep.Answers)
			}
			// The index never failed: a send observed as unavailable without a 503 is a
			// dropped send misreported (issue 18).
			if rep.Outcomes == nil || rep.Outcomes["unavailable"] != int64(rep.Statuses[http.StatusServiceUnavailable]) {
				t.Errorf("outcomes %v next to statuses %v: unavailable must match the 503s", rep.Outcomes, rep.Statuses)
			}
		})
	}
}

// Without dropped sends, the server's outcomes and the clients' answers agree one
// for one (Run checks it; a mismatch is a violation): the outcomes are what the
// clients got.
func TestOutcomesAgreeWithAnswers(t *testing.T) {
	srv := serve(t, "mem", 2*time.Millisecond)
	// The request count ends the load, not its duration: a send still under way when
	// the load phase's time runs out is cancelled, a drop whose outcome the server
	// may observe as anything (seen under -race on a loaded machine).
	rep, err := loadtest.Run(context.Background(), loadtest.Config{BaseURL: srv.URL, Clients: 16, Requests: 400,
		Duration: 2 * time.Minute, Drops: -1, Conflicts: 0.1, Replies: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	report(t, rep)
	if n := rep.Answers["dropped"]; n > 0 {
		t.Fatalf("%d sends were dropped (the load ran out of time?); the comparison needs none", n)
	}
	var total int64
	for _, n := range rep.Outcomes {
		total += n
	}
	if total != int64(rep.Sends) {
		t.Errorf("the server observed %d keyed sends, the clients made %d", total, rep.Sends)
	}
	for outcome, answer := range map[string]string{"conflict": "already-held", "in_flight": "in-flight", "unavailable": "unavailable"} {
		if rep.Outcomes[outcome] != int64(rep.Answers[answer]) {
			t.Errorf("%d %s outcomes, %d %s answers", rep.Outcomes[outcome], outcome, rep.Answers[answer], answer)
		}
	}
	if got, want := rep.Outcomes["claimed"]+rep.Outcomes["replayed"], int64(rep.Answers["task"]+rep.Answers["message"]); got != want {
		t.Errorf("%d claimed and replayed outcomes, %d results", got, want)
	}
	if rep.Outcomes["conflict"] == 0 || rep.Outcomes["replayed"] == 0 {
		t.Errorf("the load had no conflicts or no replays: %v", rep.Outcomes)
	}
}

// SPEC §5: identical sends started together, on each binding, unary and streaming,
// run the agent once per key (100 keys × 64 sends in the long form).
func TestBurst(t *testing.T) {
	srv := serve(t, "mem", 0)
	bc := loadtest.BurstConfig{BaseURL: srv.URL, Keys: 10, Copies: 16}
	if long() {
		bc.Keys, bc.Copies = 100, 64
	}
	rep, err := loadtest.Burst(context.Background(), bc)
	if err != nil {
		t.Fatal(err)
	}
	report(t, rep)
	if want := int64(4 * bc.Keys); rep.Runs() != want {
		t.Errorf("agent ran %d times, want %d", rep.Runs(), want)
	}
}

// The checks catch a server that does not deduplicate: the bare server runs every
// duplicate.
func TestLoadCatchesDoubleRuns(t *testing.T) {
	srv := testkit.NewServer(t, testkit.Config{Agent: testkit.Echo(0)})
	rep, err := loadtest.Run(context.Background(), loadtest.Config{BaseURL: srv.URL, Clients: 4, Requests: 100,
		Duplicates: 0.5, Drops: -1, Conflicts: -1})
	if err != nil {
		t.Fatal(err)
	}
	summary := rep.String()
	if rep.OK() {
		t.Fatalf("no violation against a server that runs every duplicate:\n%s", summary)
	}
	for _, want := range []string{"without the extension", "answers for message", "ran more than once"} {
		if !strings.Contains(summary, want) {
			t.Errorf("no violation %q in:\n%s", want, summary)
		}
	}
}
