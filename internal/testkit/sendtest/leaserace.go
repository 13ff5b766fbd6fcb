package sendtest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TrialsVar names the environment variable that sets the number of a LeaseRace's
// trials (the opt-in long version: IDEMPOTENCY_LEASE_TRIALS=1000).
const TrialsVar = "IDEMPOTENCY_LEASE_TRIALS"

// LeaseRace is the trial of issues 23 and 24 between two processes that share one key
// store: in each trial a keyed blocking send goes to First, whose agent works Run
// before its key can bind, and an identical retry goes to Retry at an offset within
// Run. The offsets are spread evenly over the whole run, so across every extension
// of the lease and every end it would have had without them; until the key binds,
// only the lease keeps the retry from taking the claim over and running the agent a
// second time.
type LeaseRace struct {
	First, Retry string // the base URLs of the two processes
	// Trials is the number of trials; TrialsVar overrides it when set.
	Trials int
	// Run is how long the agent works; Text(i) is the text of trial i's message,
	// which makes it work that long.
	Run  time.Duration
	Text func(trial int) string
	// Runs returns the number of agent runs so far, of both processes together.
	Runs func(t testing.TB) int64
}

// LeaseRaceReport is what a LeaseRace saw.
type LeaseRaceReport struct {
	Trials int
	// Retries counts what the retries got: task, message, 409, error, or the answer.
	Retries map[string]int
	// Runs is the number of agent runs of all the trials; RunTwice, the number of
	// trials whose first attempt and retry were answered by two runs.
	Runs, RunTwice int64
	// Doubles lists the evidence of a second run: a key answered with two tasks or
	// two Messages, more runs than sends in a wave, a first attempt that failed.
	Doubles []string
}

func (r LeaseRaceReport) String() string {
	kinds := slices.Sorted(maps.Keys(r.Retries))
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s=%d", k, r.Retries[k])
	}
	return fmt.Sprintf("%d trials, %d agent runs, %d keys answered by two runs; retries got%s", r.Trials, r.Runs, r.RunTwice, b.String())
}

// wave is the number of trials that run at once; their offsets interleave.
const wave = 50

// Do runs the trials, JSON-RPC unary sends, in waves of 50 at once, and reports.
func (lr LeaseRace) Do(t testing.TB) LeaseRaceReport {
	t.Helper()
	trials := lr.Trials
	if n, err := strconv.Atoi(os.Getenv(TrialsVar)); err == nil && n > 0 {
		trials = n
	}
	rep := LeaseRaceReport{Trials: trials, Retries: map[string]int{}}
	var mu sync.Mutex
	double := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		rep.Doubles = append(rep.Doubles, fmt.Sprintf(format, args...))
	}
	for start := 0; start < trials; start += wave {
		before := lr.Runs(t)
		end := min(start+wave, trials)
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			off := time.Duration((i*37)%trials) * lr.Run / time.Duration(trials)
			wg.Go(func() {
				m := NewMsg(JSONRPC, false, lr.Text(i))
				first := make(chan Answer, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), lr.Run+30*time.Second)
					defer cancel()
					a, err := Send(ctx, lr.First, m)
					if err != nil {
						double("trial %d: first attempt failed: %v", i, err)
					}
					first <- a
				}()
				time.Sleep(off)
				ctx, cancel := context.WithTimeout(context.Background(), lr.Run+10*time.Second)
				retry, err := Send(ctx, lr.Retry, m)
				cancel()
				got := retry.Kind
				switch {
				case err != nil:
					got = "error"
				case retry.Status == 409:
					got = "409"
				case got != "task" && got != "message":
					got = retry.String()
				}
				mu.Lock()
				rep.Retries[got]++
				mu.Unlock()
				f := <-first
				if f.TaskID+f.MessageID != "" && retry.TaskID+retry.MessageID != "" && f.TaskID+f.MessageID != retry.TaskID+retry.MessageID {
					double("trial %d (retry at %v): the first attempt got %v, its retry %v: two runs", i, off, f, retry)
					mu.Lock()
					rep.RunTwice++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		// Retries that took a claim over run the agent too: wait for those runs.
		time.Sleep(lr.Run / 2)
		got := lr.Runs(t) - before
		rep.Runs += got
		if got != int64(end-start) {
			double("trials %d to %d: the agent ran %d times for %d sends", start, end-1, got, end-start)
		}
	}
	return rep
}
