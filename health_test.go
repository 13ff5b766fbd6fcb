package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
)

// downIndex is a KeyIndex whose Lookup fails with err, or blocks until ctx ends when
// err is nil.
type downIndex struct {
	idempotency.KeyIndex
	err error
}

func (d downIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if d.err != nil {
		return idempotency.Record{}, false, d.err
	}
	<-ctx.Done()
	return idempotency.Record{}, false, ctx.Err()
}

func TestCheckIndex(t *testing.T) {
	if err := idempotency.CheckIndex(t.Context(), memstore.New(memstore.Options{})); err != nil {
		t.Errorf("CheckIndex(memstore) = %v", err)
	}
	driver := errors.New("dial tcp 127.0.0.1:15432: connect: connection refused")
	err := idempotency.CheckIndex(t.Context(), downIndex{err: driver})
	if !errors.Is(err, idempotency.ErrIndexDown) || !errors.Is(err, driver) {
		t.Errorf("CheckIndex(failing) = %v; want ErrIndexDown wrapping the index's error", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = idempotency.CheckIndex(ctx, downIndex{})
	if !errors.Is(err, idempotency.ErrIndexDown) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("CheckIndex(hanging) = %v after %v; want ErrIndexDown at ctx's deadline", err, time.Since(start))
	}
}

// The probe finds nothing and stores nothing.
func TestCheckIndexStoresNothing(t *testing.T) {
	idx := memstore.New(memstore.Options{})
	for range 3 {
		if err := idempotency.CheckIndex(t.Context(), idx); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := idx.Lookup(t.Context(), idempotency.HealthScope, idempotency.HealthKey); ok || err != nil {
		t.Errorf("the probe key is held after checks: %v, %v", ok, err)
	}
}
