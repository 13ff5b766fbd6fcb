package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Probe scope and key of [CheckIndex]: a Lookup of them reads the index's storage and
// finds nothing (no client can claim a key in a scope it does not name, and the
// middleware never looks this key up for a client), so a check costs one read and
// changes nothing.
const (
	HealthScope = "a2a-idempotency-health-check"
	HealthKey   = "health-check-probe-key-0000"
)

// DefaultHealthTimeout bounds [CheckIndex] when ctx has no earlier deadline.
const DefaultHealthTimeout = 2 * time.Second

// ErrIndexDown is wrapped by the error of [CheckIndex] when the index did not
// answer.
var ErrIndexDown = errors.New("idempotency: the key index does not answer")

// CheckIndex reports whether index answers, for a readiness check: it looks up a
// probe key (one read, nothing stored) within [DefaultHealthTimeout] or ctx's
// deadline, whichever is first. The error wraps [ErrIndexDown] and the index's own
// error: log it, and tell a client only that the key store is unavailable, since the
// index's error carries driver text (addresses, SQL).
func CheckIndex(ctx context.Context, index KeyIndex) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultHealthTimeout)
	defer cancel()
	start := time.Now()
	if _, _, err := index.Lookup(ctx, HealthScope, HealthKey); err != nil {
		return fmt.Errorf("%w (after %v): %w", ErrIndexDown, time.Since(start).Round(time.Millisecond), err)
	}
	return nil
}
