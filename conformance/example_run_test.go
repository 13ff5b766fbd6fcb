package conformance_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/memstore"
)

// testMemstore is a store's whole conformance test (its TestConformance) on the
// real clock: Run, with a function that opens a fresh index for each check.
func testMemstore(t *testing.T) {
	conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
		return memstore.New(memstore.Options{})
	})
}

// Run is called from a store's own test, as testMemstore above calls it.
// (An example has no *testing.T: this one runs that test as go test would. The lease
// checks wait for real leases to end, about 3 s in all.)
func ExampleRun() {
	fmt.Println("memstore conforms:", runTest("testMemstore", testMemstore))
	// Output:
	// memstore conforms: true
}

// testMemstoreHarness runs the suite with a controllable clock, so that
// the lease and time-to-live checks step over time instead of waiting for it, and
// with no other capability: the checks that need one are skipped, each with a message
// that names it.
func testMemstoreHarness(t *testing.T) {
	conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
		clock := conformance.NewClock(time.Now())
		return conformance.Harness{
			Index:   memstore.New(memstore.Options{Now: clock.Now, TTL: time.Hour}),
			Advance: clock.Advance,
			TTL:     time.Hour,
		}
	})
}

func ExampleRunHarness() {
	fmt.Println("memstore conforms:", runTest("testMemstoreHarness", testMemstoreHarness))
	// Output:
	// memstore conforms: true
}

// runTest runs the test f as go test would, quietly (the example's output is
// compared), and reports whether it passed.
func runTest(name string, f func(*testing.T)) bool {
	if v := flag.Lookup("test.v"); v != nil {
		old := v.Value.String()
		v.Value.Set("false")
		defer v.Value.Set(old)
	}
	all := func(pattern, name string) (bool, error) { return true, nil }
	return testing.RunTests(all, []testing.InternalTest{{Name: name, F: f}})
}
