package testkit

import (
	"sync"
	"sync/atomic"
	"time"
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
