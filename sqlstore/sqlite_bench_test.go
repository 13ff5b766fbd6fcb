//go:build cgo && unix

package sqlstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// BenchmarkSQLiteClaimBind measures what a keyed send costs the store on SQLite: the
// claim of a fresh key and its bind to a 300-byte reply, at 1 and 8 concurrent
// goroutines, on the table Migrate creates and on the same columns in a WITHOUT ROWID
// table (one B-tree fewer per insert; it measured the same, 2026-12-04). Beside
// ns/op (wall time), it reports the process's CPU per claim and bind, and the part
// of it spent in the kernel (WAL writes and file locks, most of it).
func BenchmarkSQLiteClaimBind(b *testing.B) {
	reply := []byte(strings.Repeat("r", 300))
	for _, layout := range []string{"migrated", "without_rowid"} {
		for _, conc := range []int{1, 8} {
			b.Run(fmt.Sprintf("table=%s/goroutines=%d", layout, conc), func(b *testing.B) {
				db := openSQLite(b)
				table := "keys_bench"
				if layout == "without_rowid" {
					if _, err := db.a.Exec(`CREATE TABLE ` + table + ` (scope TEXT NOT NULL, "key" TEXT NOT NULL,
	message_id TEXT NOT NULL, task_id TEXT, reply BLOB, token INTEGER NOT NULL, claimed_at INTEGER NOT NULL,
	lease_expires_at INTEGER NOT NULL, PRIMARY KEY (scope, "key")) WITHOUT ROWID`); err != nil {
						b.Fatal(err)
					}
				}
				store, _ := db.stores(b, sqlstore.Options{Table: table})
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				var next atomic.Int64
				send := func() error {
					k := fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", next.Add(1))
					c, err := store.Claim(ctx, "bench", k, "m", time.Minute)
					if err == nil && c.Status != idempotency.Claimed {
						err = fmt.Errorf("claim of a fresh key: %v", c.Status)
					}
					if err != nil {
						return err
					}
					return store.Bind(ctx, "bench", k, c.Token, idempotency.Binding{Reply: reply})
				}
				b.ReportAllocs()
				b.ResetTimer()
				user0, sys0 := processCPU(b)
				var wg sync.WaitGroup
				var left atomic.Int64
				left.Store(int64(b.N))
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for left.Add(-1) >= 0 {
							if err := send(); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				user1, sys1 := processCPU(b)
				b.ReportMetric(float64(user1-user0+sys1-sys0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(sys1-sys0)/float64(b.N), "sys-ns/op")
			})
		}
	}
}

// processCPU returns the user and system CPU time of this process so far.
func processCPU(tb testing.TB) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
