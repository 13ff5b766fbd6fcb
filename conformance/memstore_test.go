package conformance_test

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

// memTTL and memLimit are the memstore under test's settings: the default TTL, and a
// per-scope bound small enough for CapacityFull to fill.
const (
	memTTL   = 24 * time.Hour
	memLimit = 200
)

// TestMemstore runs the suite on memstore with every capability: a controllable
// clock, a second handle (the same *Store, reached through another value: in memory,
// the storage is the Store), and a task store of its own, whose deletions the
// Store must not notice. memstore's own tests run the suite on the real clock, and
// the benchmark.
func TestMemstore(t *testing.T) {
	conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
		clock := conformance.NewClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
		store := memstore.New(memstore.Options{Now: clock.Now, TTL: memTTL, MaxKeysPerScope: memLimit})
		tasks := &tasks{m: make(map[string]bool)}
		return conformance.Harness{
			Index:      store,
			Advance:    clock.Advance,
			TTL:        memTTL,
			OpenHandle: func() (idempotency.KeyIndex, error) { return struct{ idempotency.KeyIndex }{store}, nil },
			CreateTask: tasks.create,
			DeleteTask: tasks.delete,
		}
	})
}

// tasks is a task store next to the index: it knows nothing of keys.
type tasks struct {
	mu sync.Mutex
	n  int
	m  map[string]bool
}

func (s *tasks) create(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := fmt.Sprintf("task-%d", s.n)
	s.m[id] = true
	return id, nil
}

func (s *tasks) delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.m[id] {
		return fmt.Errorf("task %q not found", id)
	}
	delete(s.m, id)
	return nil
}
