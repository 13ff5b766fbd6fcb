package memstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/memstore"
)

// TestConformance runs the KeyIndex suite with every capability: a controllable clock,
// so that lease, time-to-live and sweep checks run exactly; a per-scope bound small
// enough for the capacity checks to fill; a second handle (in memory the Store is the
// storage, so it is the same Store behind another interface value); and a task store
// that the Store knows nothing of.
func TestConformance(t *testing.T) {
	const ttl = 24 * time.Hour
	conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
		clock := conformance.NewClock(time.Now())
		s := memstore.New(memstore.Options{Now: clock.Now, TTL: ttl, MaxKeysPerScope: 200})
		tasks := &taskStore{ids: make(map[string]bool)}
		return conformance.Harness{
			Index:      s,
			Advance:    clock.Advance,
			TTL:        ttl,
			OpenHandle: func() (idempotency.KeyIndex, error) { return struct{ idempotency.KeyIndex }{s}, nil },
			CreateTask: tasks.create,
			DeleteTask: tasks.delete,
		}
	})
}

// TestConformanceRealClock runs the suite on a Store with its defaults, whose clock is
// the monotonic clock.
func TestConformanceRealClock(t *testing.T) {
	conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
		return memstore.New(memstore.Options{})
	})
}

// taskStore is a task store served next to the index.
type taskStore struct {
	mu  sync.Mutex
	n   int
	ids map[string]bool
}

func (s *taskStore) create(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := fmt.Sprintf("task-%d", s.n)
	s.ids[id] = true
	return id, nil
}

func (s *taskStore) delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ids[id] {
		return fmt.Errorf("task %q not found", id)
	}
	delete(s.ids, id)
	return nil
}
