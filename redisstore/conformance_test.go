package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/redisstore"
	"github.com/a2akit/idempotency/redisstore/redistest"
)

// conformanceTTL is the TTL of the harness's stores; the suite steps over it on the
// controllable clock.
const conformanceTTL = 24 * time.Hour

// bounds are the two ways a Store keeps its keys, each run through the suite: no
// per-scope bound (the default: a claim of an absent key is one SET, and Capacity
// returns errors.ErrUnsupported, so the suite skips the checks that read the count),
// and a bound small enough for the capacity checks to fill (every claim a script that
// counts the key exactly).
var bounds = []struct {
	name  string
	limit int
}{{"NoBound", 0}, {"Bound200", 200}}

// TestConformance runs the KeyIndex suite with every capability: a controllable clock
// (Options.Now), so that lease, time-to-live and capacity checks run exactly; a
// second handle, a Store on a client of its own (another connection pool, as a second
// process has); and a task store in the same Redis that the Store knows nothing of.
func TestConformance(t *testing.T) {
	url := redistest.URL(t)
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
				clock := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				prefix := redistest.Prefix(t, url)
				opts := redisstore.Options{Prefix: prefix, Now: clock.Now, TTL: conformanceTTL, MaxKeysPerScope: b.limit}
				rdb := redistest.Client(t, url)
				ix, err := redisstore.New(rdb, opts)
				if err != nil {
					t.Fatal(err)
				}
				tasks := prefix + "task:"
				return conformance.Harness{
					Index:   ix,
					Advance: clock.Advance,
					TTL:     conformanceTTL,
					OpenHandle: func() (idempotency.KeyIndex, error) {
						return redisstore.New(redistest.Client(t, url), opts)
					},
					CreateTask: func(ctx context.Context) (string, error) {
						id := "task-" + randomHex()
						return id, rdb.HSet(ctx, tasks+id, "state", "TASK_STATE_COMPLETED").Err()
					},
					DeleteTask: func(ctx context.Context, id string) error {
						return rdb.Del(ctx, tasks+id).Err()
					},
				}
			})
		})
	}
}

// TestConformanceServerClock runs the suite on Stores as servers run them: leases and
// times to live on the Redis server's clock, with a second handle on a client of its
// own, without a bound (the default) and with one.
func TestConformanceServerClock(t *testing.T) {
	url := redistest.URL(t)
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
				opts := redisstore.Options{Prefix: redistest.Prefix(t, url), MaxKeysPerScope: b.limit}
				ix, err := redisstore.New(redistest.Client(t, url), opts)
				if err != nil {
					t.Fatal(err)
				}
				return conformance.Harness{
					Index: ix,
					OpenHandle: func() (idempotency.KeyIndex, error) {
						return redisstore.New(redistest.Client(t, url), opts)
					},
				}
			})
		})
	}
}

func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
