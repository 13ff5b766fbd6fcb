// Package conformance is a test suite for implementations of
// [idempotency.KeyIndex]. Authors of custom indexes run it to show that their claims
// are atomic, fenced and kept when their task is deleted, which is what the kit's
// exactly-once promise rests on.
//
// A store's whole conformance test is one call:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
//			ix := mystore.Open(...)
//			t.Cleanup(func() { ix.Close() })
//			return ix
//		})
//	}
//
// [Run] checks what any index must do on the real clock. An author who can offer more
// calls [RunHarness] with a [Harness]: a controllable clock (exact lease and
// time-to-live checks), a second handle on the same storage (exactly one winner across
// connection pools, as across processes) and task creation and deletion in the task
// store served next to the index (a key survives the deletion of its task):
//
//	func TestConformance(t *testing.T) {
//		conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
//			clock := conformance.NewClock(time.Now())
//			db := openTestDB(t) // registers its own t.Cleanup
//			return conformance.Harness{
//				Index:      mystore.New(db, mystore.Options{Now: clock.Now, TTL: 24 * time.Hour}),
//				Advance:    clock.Advance,
//				TTL:        24 * time.Hour,
//				OpenHandle: func() (idempotency.KeyIndex, error) { return mystore.New(openTestDB(t), ...), nil },
//				CreateTask: func(ctx context.Context) (string, error) { return tasks.Create(ctx, db) },
//				DeleteTask: func(ctx context.Context, id string) error { return tasks.Delete(ctx, db, id) },
//			}
//		})
//	}
//
// Every check is its own subtest with a stable name (ClaimFreeKey, ExactlyOneWinner,
// LeaseTakeover, KeySurvivesTaskDeletion, …), so that one can be rerun with
// go test -run 'TestConformance/LeaseTakeover'. A check that needs a capability the
// harness does not offer is skipped with a message that names it. When the index
// implements [idempotency.Honouring], [idempotency.CapacityReporter] or
// [idempotency.Sweeper], the suite checks those too.
//
// Concurrency checks start many goroutines released together; some races show only
// now and then, so run the suite under the race detector and more than once
// (go test -race -count=3). [Benchmark] measures claims on distinct keys and on one hot
// key with b.RunParallel, and doubles as a race probe.
//
// The package imports only the standard library and the kit's root package, so a
// store author's tests inherit no dependency.
package conformance
