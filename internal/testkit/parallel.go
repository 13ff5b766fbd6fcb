package testkit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

// Parallel runs op(i) for every i in [from, to) on conc goroutines, each taking the
// next i until none is left or op fails, and returns the wall time and the first
// error. The benchmarks use it to drive a store and its baseline with the same load.
func Parallel(conc, from, to int, op func(i int) error) (time.Duration, error) {
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	next.Store(int64(from))
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// Alternate measures kit against a baseline: b.N operations each, numbered from
// first, conc at a time ([Parallel]), in ten rounds that alternate which side goes
// first, so that a change of load on the machine during the run affects both sides
// alike. It resets b's timer before the rounds and stops it after them, and returns
// each side's total wall time; a failed operation fails the benchmark.
func Alternate(b *testing.B, conc, first int, kit, base func(i int) error) (kitTime, baseTime time.Duration) {
	b.Helper()
	b.ResetTimer()
	const rounds = 10
	for r := range rounds {
		from, to := first+r*b.N/rounds, first+(r+1)*b.N/rounds
		sides := []struct {
			op  func(int) error
			sum *time.Duration
		}{{base, &baseTime}, {kit, &kitTime}}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			d, err := Parallel(conc, from, to, side.op)
			if err != nil {
				b.Fatal(err)
			}
			*side.sum += d
		}
	}
	b.StopTimer()
	return kitTime, baseTime
}

// WarmUp runs each op conc times, conc at a time, on the indexes [0, conc) (which the
// measured rounds then skip by starting at conc), so that no side of a benchmark pays
// for opening connections or loading scripts; a failed operation fails the benchmark.
func WarmUp(b *testing.B, conc int, ops ...func(i int) error) {
	b.Helper()
	for _, op := range ops {
		if _, err := Parallel(conc, 0, conc, op); err != nil {
			b.Fatal(err)
		}
	}
}

// FreshClaims returns the operation the claim benchmarks measure: claim key(i), a key
// ix has never seen, in the scope "bench" for a minute; anything but Claimed is an
// error.
func FreshClaims(ctx context.Context, ix idempotency.KeyIndex, key func(int) string) func(i int) error {
	return func(i int) error {
		c, err := ix.Claim(ctx, "bench", key(i), "m", time.Minute)
		if err == nil && c.Status != idempotency.Claimed {
			err = fmt.Errorf("claim of a fresh key: %v", c.Status)
		}
		return err
	}
}

// ReportClaims reports what SPEC §5 asks of a claim benchmark, from the wall times of
// b.N claims and of b.N baseline operations: ns/op (the claim's), claims/s, the
// baseline's operations per second as "baseline-<base>/s", and ratio (claims/s over
// the baseline's).
func ReportClaims(b *testing.B, claimTime, baseTime time.Duration, base string) {
	b.Helper()
	claims := float64(b.N) / claimTime.Seconds()
	bases := float64(b.N) / baseTime.Seconds()
	b.ReportMetric(float64(claimTime.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(claims, "claims/s")
	b.ReportMetric(bases, "baseline-"+base+"/s")
	b.ReportMetric(claims/bases, "ratio")
}
