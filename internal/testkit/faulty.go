package testkit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// Op names an operation of [idempotency.KeyIndex], for [FaultyIndex].
type Op int

// The operations of a KeyIndex.
const (
	OpClaim Op = iota
	OpBind
	OpRelease
	OpLookup
	OpExtend
	numOps
)

// ErrInjected is the error a [FaultyIndex] fails with.
var ErrInjected = errors.New("testkit: injected index failure (storage unreachable)")

// FaultyIndex passes every call to a real index, except those a test asks it to
// fail (with [ErrInjected]), to hang (until the call's context ends, at most 10 s)
// or to delay, per operation. Its setters are safe to call while the index is in use.
type FaultyIndex struct {
	idempotency.KeyIndex

	fail, hang [numOps]atomic.Bool
	failNext   [numOps]atomic.Int64
	delay      [numOps]atomic.Int64 // a time.Duration
}

var _ idempotency.KeyIndex = (*FaultyIndex)(nil)

// NewFaultyIndex returns a FaultyIndex over ix that passes every call on.
func NewFaultyIndex(ix idempotency.KeyIndex) *FaultyIndex { return &FaultyIndex{KeyIndex: ix} }

// SetFail makes every call of op fail while on is true.
func (f *FaultyIndex) SetFail(op Op, on bool) { f.fail[op].Store(on) }

// SetFailAll makes every call of every operation fail while on is true.
func (f *FaultyIndex) SetFailAll(on bool) {
	for op := range numOps {
		f.SetFail(op, on)
	}
}

// FailNext makes the next n calls of op fail.
func (f *FaultyIndex) FailNext(op Op, n int64) { f.failNext[op].Store(n) }

// SetHang makes every call of op hang while on is true.
func (f *FaultyIndex) SetHang(op Op, on bool) { f.hang[op].Store(on) }

// SetDelay delays every call of op by d before it is failed, hung or passed on.
func (f *FaultyIndex) SetDelay(op Op, d time.Duration) { f.delay[op].Store(int64(d)) }

// fault applies what is set for op.
func (f *FaultyIndex) fault(ctx context.Context, op Op) error {
	if d := time.Duration(f.delay[op].Load()); d > 0 {
		time.Sleep(d)
	}
	if f.hang[op].Load() {
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return errors.New("testkit: injected hang ended")
		}
	}
	if f.fail[op].Load() || f.failNext[op].Add(-1) >= 0 {
		return ErrInjected
	}
	return nil
}

// Claim implements idempotency.KeyIndex.
func (f *FaultyIndex) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if err := f.fault(ctx, OpClaim); err != nil {
		return idempotency.Claim{}, err
	}
	return f.KeyIndex.Claim(ctx, scope, key, messageID, lease)
}

// Bind implements idempotency.KeyIndex.
func (f *FaultyIndex) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := f.fault(ctx, OpBind); err != nil {
		return err
	}
	return f.KeyIndex.Bind(ctx, scope, key, token, b)
}

// Release implements idempotency.KeyIndex.
func (f *FaultyIndex) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := f.fault(ctx, OpRelease); err != nil {
		return err
	}
	return f.KeyIndex.Release(ctx, scope, key, token)
}

// Lookup implements idempotency.KeyIndex.
func (f *FaultyIndex) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := f.fault(ctx, OpLookup); err != nil {
		return idempotency.Record{}, false, err
	}
	return f.KeyIndex.Lookup(ctx, scope, key)
}

// Extend implements idempotency.KeyIndex.
func (f *FaultyIndex) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if err := f.fault(ctx, OpExtend); err != nil {
		return err
	}
	return f.KeyIndex.Extend(ctx, scope, key, token, lease)
}
