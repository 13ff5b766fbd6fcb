package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
)

// BenchmarkClaimDistinct claims distinct keys from every P, the load of first sends.
// The claims/s metric is what SPEC §5 bounds (at least 1,000,000 on 2 cores).
func BenchmarkClaimDistinct(b *testing.B) {
	benchClaimDistinct(b, memstore.Options{MaxKeysPerScope: -1, MaxBytes: -1})
}

// BenchmarkClaimDistinctSteady is BenchmarkClaimDistinct with a short TTL, so that
// claims also delete expired keys and the store holds a steady number of keys instead
// of growing with b.N.
func BenchmarkClaimDistinctSteady(b *testing.B) {
	s := benchClaimDistinct(b, memstore.Options{TTL: 50 * time.Millisecond, MaxKeysPerScope: -1, MaxBytes: -1})
	c, _ := s.Capacity(context.Background(), "tenant")
	b.ReportMetric(float64(c.Held), "keys-held")
}

// benchClaimDistinct claims b.N distinct keys in scope "tenant" from every P, on a
// store built with opts, reports claims/s, and returns the store.
func benchClaimDistinct(b *testing.B, opts memstore.Options) *memstore.Store {
	ctx := context.Background()
	s := memstore.New(opts)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = idempotency.NewKey()
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			c, err := s.Claim(ctx, "tenant", keys[i], "5f0c6a3e-8d1b-4f7a-9c2e-1b3d5f7a9c2e", time.Minute)
			if err != nil || c.Status != idempotency.Claimed {
				b.Errorf("Claim: %+v, %v", c, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
	return s
}

// BenchmarkClaimHotKey retries one bound key from every P, the load of a retry storm.
func BenchmarkClaimHotKey(b *testing.B) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	key := idempotency.NewKey()
	const msg = "5f0c6a3e-8d1b-4f7a-9c2e-1b3d5f7a9c2e"
	c, err := s.Claim(ctx, "tenant", key, msg, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Bind(ctx, "tenant", key, c.Token, idempotency.Binding{TaskID: "task"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, err := s.Claim(ctx, "tenant", key, msg, time.Minute)
			if err != nil || c.Status != idempotency.HeldBySameMessage {
				b.Errorf("Claim: %+v, %v", c, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
}

// BenchmarkHeldKeyMemory measures the heap that bound keys take: 32-character keys,
// UUID message and task ids, in one tenant scope ("shared") or each in a scope of its
// own ("distinct": a 16-byte tenant per key, the worst case of the scope count). SPEC
// §5 bounds the shared case at 256 bytes per key. Each iteration fills a fresh store;
// the metric is the heap growth per key after GC, and "accounted/key" what the store
// counts against Options.MaxBytes, which must not be below it.
func BenchmarkHeldKeyMemory(b *testing.B) {
	b.Run("shared", func(b *testing.B) { benchHeldKeyMemory(b, func(int) string { return "tenant" }) })
	b.Run("distinct", func(b *testing.B) {
		benchHeldKeyMemory(b, func(i int) string { return fmt.Sprintf("tenant-%010d", i) })
	})
}

func benchHeldKeyMemory(b *testing.B, scopeOf func(i int) string) {
	const n = 100_000
	ctx := context.Background()
	keys := make([]string, n)
	msgs := make([]string, n)
	tasks := make([]string, n)
	scopes := make([]string, n)
	for i := range n {
		keys[i] = idempotency.NewKey()
		msgs[i] = fmt.Sprintf("%08x-8d1b-4f7a-9c2e-1b3d5f7a9c2e", i)
		tasks[i] = fmt.Sprintf("%08x-1111-4f7a-9c2e-1b3d5f7a9c2e", i)
		scopes[i] = scopeOf(i)
	}
	var perKey, accounted float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := memstore.New(memstore.Options{MaxKeysPerScope: -1, MaxBytes: -1})
		for i := range n {
			c, err := s.Claim(ctx, scopes[i], keys[i], msgs[i], time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Bind(ctx, scopes[i], keys[i], c.Token, idempotency.Binding{TaskID: tasks[i]}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perKey = float64(after.HeapAlloc-before.HeapAlloc) / n
		accounted = float64(s.Bytes()) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(perKey, "bytes/key")
	b.ReportMetric(accounted, "accounted/key")
}
