package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
)

// noCount is the reference index keeping no count of keys per scope: its Capacity
// returns errors.ErrUnsupported, as the contract allows an index without a bound.
type noCount struct{ *refIndex }

func (noCount) Capacity(context.Context, string) (idempotency.Capacity, error) {
	return idempotency.Capacity{}, fmt.Errorf("no count kept: %w", errors.ErrUnsupported)
}

// noCountHarness is the full reference harness around noCount, on an index bounded
// to limit keys per scope (0: none).
func noCountHarness(limit int) func(t *testing.T) Harness {
	cfg := full
	cfg.limit = limit
	cfg.wrap = wrapped(func(x *refIndex) noCount { return noCount{x} })
	return cfg.harness
}

// TestNoCountSkipsCapacityChecks: on an unbounded index whose Capacity returns
// errors.ErrUnsupported, the checks that read the count are skipped with a reason
// naming it, CapacityFull still claims keys in one scope past the usual bounds and
// passes, and the checks that read the count only when there is one pass.
func TestNoCountSkipsCapacityChecks(t *testing.T) {
	for _, c := range checks {
		if !strings.HasPrefix(c.name, "Capacity") && c.name != "ExtendKeepsClaim" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			err := c.exec(t.Context(), noCountHarness(0)(t))
			var skip *skipError
			switch {
			case c.name == "CapacityFull" || c.name == "ExtendKeepsClaim":
				if err != nil {
					t.Errorf("%s on an unbounded index that keeps no count: %v; want it run and passed", c.name, err)
				}
			case !errors.As(err, &skip) || !strings.Contains(skip.reason, "errors.ErrUnsupported"):
				t.Errorf("%s = %v; want it skipped with a reason naming errors.ErrUnsupported", c.name, err)
			}
		})
	}
}

// TestNoCountHidesNoBound: an index whose Capacity returns errors.ErrUnsupported but
// that refuses a new key of a full scope (a bound it does not report) fails
// CapacityFull: the skip of the count's checks hides no bound.
func TestNoCountHidesNoBound(t *testing.T) {
	err := checkNamed(t, "CapacityFull").exec(t.Context(), noCountHarness(refLimit)(t))
	var skip *skipError
	if err == nil || errors.As(err, &skip) || !errors.Is(err, idempotency.ErrFull) {
		t.Errorf("CapacityFull on an index bounded to %d keys per scope whose Capacity returns errors.ErrUnsupported = %v; want it failed with ErrFull",
			refLimit, err)
	}
}
