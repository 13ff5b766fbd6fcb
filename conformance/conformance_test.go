package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

const (
	refTTL   = 24 * time.Hour
	refLimit = 100
)

// refConfig says how to build a Harness around the reference index.
type refConfig struct {
	clock   bool // a controllable clock, and the TTL
	handles bool
	tasks   bool
	limit   int
	// design is "Map" (refIndex, the default) or "Sharded" (shardIndex).
	design string
	// bug is the slip of the index, or of the front layer around it; zero is none.
	bug bug
	// wrap turns the reference index into a broken one; nil keeps it correct.
	wrap func(*refIndex) idempotency.KeyIndex
}

// full is the reference harness with every capability.
var full = refConfig{clock: true, handles: true, tasks: true, limit: refLimit}

func (c refConfig) harness(t *testing.T) Harness {
	var h Harness
	now := time.Now
	if c.clock {
		clock := NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
		now, h.Advance, h.TTL = clock.Now, clock.Advance, refTTL
	}
	inner := c.bug
	if frontBugs[inner] {
		inner = ""
	}
	var ix idempotency.KeyIndex
	x := newBuggyRefIndex(now, refTTL, c.limit, inner)
	switch {
	case c.design == "Sharded":
		ix = newShardIndex(now, refTTL, c.limit, inner)
	case c.wrap != nil:
		ix = c.wrap(x)
	default:
		ix = x
	}
	if frontBugs[c.bug] {
		ix = newFront(ix, c.bug)
	}
	h.Index = ix
	if c.handles {
		h.OpenHandle = func() (idempotency.KeyIndex, error) {
			if f, ok := ix.(front); ok {
				return handle{newFront(f.ix, f.bug)}, nil // a process of its own, on the same storage
			}
			return handle{ix}, nil
		}
	}
	if c.tasks {
		tasks := newTaskStore()
		h.CreateTask = tasks.create
		h.DeleteTask = func(ctx context.Context, id string) error {
			if err := tasks.delete(ctx, id); err != nil {
				return err
			}
			if d, ok := ix.(interface{ taskDeleted(string) }); ok {
				d.taskDeleted(id)
			}
			return nil
		}
	}
	t.Cleanup(func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		clear(x.keys)
	})
	return h
}

// handle is a second handle on an in-memory index: the same storage, reached through
// another value, which hides the optional interfaces.
type handle struct{ idempotency.KeyIndex }

// taskStore is a task store: the tasks exist until deleted.
type taskStore struct {
	mu    sync.Mutex
	next  int
	tasks map[string]bool
}

func newTaskStore() *taskStore { return &taskStore{tasks: make(map[string]bool)} }

func (s *taskStore) create(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := fmt.Sprintf("task-%d", s.next)
	s.tasks[id] = true
	return id, nil
}

func (s *taskStore) delete(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tasks[id] {
		return fmt.Errorf("task %q not found", id)
	}
	delete(s.tasks, id)
	return nil
}

func wrapped[T idempotency.KeyIndex](f func(*refIndex) T) func(*refIndex) idempotency.KeyIndex {
	return func(x *refIndex) idempotency.KeyIndex { return f(x) }
}

// checkNamed returns the check called name.
func checkNamed(t *testing.T, name string) check {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no check is named %q", name)
	return check{}
}

// TestReference runs the suite, through RunHarness, on the reference index with every
// capability. It must pass.
func TestReference(t *testing.T) {
	RunHarness(t, full.harness)
}

// TestReferenceRealClock runs the suite, through Run, on the reference index on the
// real clock with no capability: the lease and sweep checks use real time.
func TestReferenceRealClock(t *testing.T) {
	Run(t, func(t *testing.T) idempotency.KeyIndex {
		return refConfig{limit: refLimit}.harness(t).Index
	})
}

// TestNoCheckSkippedWithFullHarness: with every capability, on an index with every
// optional interface, every check runs (none is skipped) and passes.
func TestNoCheckSkippedWithFullHarness(t *testing.T) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.exec(t.Context(), full.harness(t)); err != nil {
				t.Errorf("%s on the reference index with every capability: %v", c.name, err)
			}
		})
	}
}

// TestSkipsNameWhatIsMissing: a check that needs a capability or an optional interface
// the harness does not offer is skipped, and the reason names it.
func TestSkipsNameWhatIsMissing(t *testing.T) {
	tests := []struct {
		check string
		h     func(t *testing.T) Harness
		want  string
	}{
		{"TTLExpiresKey", refConfig{}.harness, "Harness.Advance"},
		{"TTLExpiresKey", func(t *testing.T) Harness { h := full.harness(t); h.TTL = 0; return h }, "Harness.TTL"},
		{"ExactlyOneWinnerTwoHandles", refConfig{}.harness, "Harness.OpenHandle"},
		{"KeySurvivesTaskDeletion", refConfig{}.harness, "Harness.CreateTask and Harness.DeleteTask"},
		{"KeySurvivesTaskDeletion", func(t *testing.T) Harness { h := full.harness(t); h.DeleteTask = nil; return h }, "Harness.DeleteTask"},
		{"HonoursKeys", hidden, "idempotency.Honouring"},
		{"CapacityCountsClaims", hidden, "idempotency.CapacityReporter"},
		{"CapacityFullAbandoned", refConfig{}.harness, "Capacity.Limit is 0"},
		{"SweepBatches", hidden, "idempotency.Sweeper"},
	}
	for _, tt := range tests {
		t.Run(tt.check, func(t *testing.T) {
			err := checkNamed(t, tt.check).exec(t.Context(), tt.h(t))
			var skip *skipError
			if !errors.As(err, &skip) || !strings.Contains(skip.reason, tt.want) {
				t.Errorf("%s = %v; want it skipped with a reason naming %q", tt.check, err, tt.want)
			}
		})
	}
}

// hidden is the full harness with the index behind a handle, which hides its optional
// interfaces.
func hidden(t *testing.T) Harness {
	h := full.harness(t)
	h.Index = handle{h.Index}
	return h
}

// TestCheckNames: names are unique, and usable as subtest names unchanged.
func TestCheckNames(t *testing.T) {
	seen := make(map[string]bool)
	for _, c := range checks {
		if seen[c.name] {
			t.Errorf("two checks are named %q", c.name)
		}
		seen[c.name] = true
		if c.name == "" || strings.ContainsAny(c.name, " /#") {
			t.Errorf("check name %q would be rewritten in subtest names", c.name)
		}
	}
}

// TestDocListsEveryCheck: the package documentation names every check, since store
// authors read it to know what a failing subtest name means.
func TestDocListsEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !regexp.MustCompile(`\b` + c.name + `\b`).Match(doc) {
			t.Errorf("doc.go does not list check %s", c.name)
		}
	}
}

func TestClockNeverRunsBack(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	c.Advance(-time.Hour)
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("after Advance(-1h), Now() = %v; want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), start.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("after Advance(90s), Now() = %v; want %v", got, want)
	}
}

func BenchmarkReference(b *testing.B) {
	Benchmark(b, func(b *testing.B) idempotency.KeyIndex { return newRefIndex(time.Now, refTTL, 0) })
}
