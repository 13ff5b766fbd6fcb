package conformance

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
)

// Benchmark measures the index newIndex returns, on b.RunParallel:
//
//   - ClaimDistinct: first sends, a Claim of a new key each;
//   - ClaimBindDistinct: a Claim of a new key and a Bind to a task;
//   - ClaimHotKey: retries, every goroutine claiming the same bound key for the same
//     message;
//   - Lookup: lookups of 1024 bound keys.
//
// Each reports operations per second besides ns/op. Distinct keys are spread over
// scopes of 1000 keys each, so that an index bounded per scope does not fill. newIndex
// is called once per sub-benchmark run, inside it, so it can register teardown with
// b.Cleanup. Besides measuring, Benchmark is a race probe: run it with -race. A
// benchmark whose index fails an operation stops with b.Fatal, after the parallel
// goroutines are done.
func Benchmark(b *testing.B, newIndex func(b *testing.B) idempotency.KeyIndex) {
	b.Helper()
	b.Run("ClaimDistinct", func(b *testing.B) { benchDistinct(b, newIndex(b), false) })
	b.Run("ClaimBindDistinct", func(b *testing.B) { benchDistinct(b, newIndex(b), true) })
	b.Run("ClaimHotKey", func(b *testing.B) { benchHotKey(b, newIndex(b)) })
	b.Run("Lookup", func(b *testing.B) { benchLookup(b, newIndex(b)) })
}

const (
	benchScopeKeys = 1000
	benchMessage   = "conformance-bench-message"
	benchTask      = "conformance-bench-task"
)

// benchKey returns a 32-character key unique to goroutine g's n-th operation.
func benchKey(g, n uint64) string {
	var raw [16]byte
	var enc [32]byte
	binary.BigEndian.PutUint64(raw[:8], g)
	binary.BigEndian.PutUint64(raw[8:], n)
	hex.Encode(enc[:], raw[:])
	return string(enc[:])
}

// benchFailure keeps the first failure of the parallel goroutines, for the benchmark
// goroutine to report.
type benchFailure chan error

func (f benchFailure) set(err error) {
	select {
	case f <- err:
	default:
	}
}

func (f benchFailure) check(b *testing.B) {
	select {
	case err := <-f:
		b.Fatal(err)
	default:
	}
}

func benchDistinct(b *testing.B, ix idempotency.KeyIndex, bind bool) {
	ctx := b.Context()
	var goroutines atomic.Uint64
	failure := make(benchFailure, 1)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := goroutines.Add(1)
		var scope string
		for n := uint64(0); pb.Next(); n++ {
			if n%benchScopeKeys == 0 {
				scope = fmt.Sprintf("conformance-bench-%d-%d", g, n/benchScopeKeys)
			}
			key := benchKey(g, n)
			c, err := ix.Claim(ctx, scope, key, benchMessage, time.Minute)
			if err != nil || c.Status != idempotency.Claimed {
				failure.set(fmt.Errorf("Claim of a new key = %s, %v; want claimed", describe(c), err))
				return
			}
			if bind {
				if err := ix.Bind(ctx, scope, key, c.Token, idempotency.Binding{TaskID: benchTask}); err != nil {
					failure.set(fmt.Errorf("Bind: %w", err))
					return
				}
			}
		}
	})
	b.StopTimer()
	failure.check(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}

// benchBound claims a new key in the empty scope and binds it to benchTask.
func benchBound(b *testing.B, ix idempotency.KeyIndex) string {
	key := idempotency.NewKey()
	c, err := ix.Claim(b.Context(), "", key, benchMessage, time.Minute)
	if err != nil || c.Status != idempotency.Claimed {
		b.Fatalf("Claim of a new key = %s, %v; want claimed", describe(c), err)
	}
	if err := ix.Bind(b.Context(), "", key, c.Token, idempotency.Binding{TaskID: benchTask}); err != nil {
		b.Fatalf("Bind: %v", err)
	}
	return key
}

func benchHotKey(b *testing.B, ix idempotency.KeyIndex) {
	ctx := b.Context()
	key := benchBound(b, ix)
	failure := make(benchFailure, 1)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := ix.Claim(ctx, "", key, benchMessage, time.Minute)
			if err != nil || c.Status != idempotency.HeldBySameMessage || c.Record.TaskID != benchTask {
				failure.set(fmt.Errorf("Claim of a bound key by its message = %s, %v; want held by same message with the task", describe(c), err))
				return
			}
		}
	})
	b.StopTimer()
	failure.check(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "retries/s")
}

func benchLookup(b *testing.B, ix idempotency.KeyIndex) {
	ctx := b.Context()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = benchBound(b, ix)
	}
	var goroutines atomic.Uint64
	failure := make(benchFailure, 1)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := goroutines.Add(1) * 7919
		for pb.Next() {
			i++
			r, ok, err := ix.Lookup(ctx, "", keys[i%uint64(len(keys))])
			if err != nil || !ok || r.TaskID != benchTask {
				failure.set(fmt.Errorf("Lookup of a bound key = %s, %t, %v; want the task", describeRecord(r), ok, err))
				return
			}
		}
	})
	b.StopTimer()
	failure.check(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}
