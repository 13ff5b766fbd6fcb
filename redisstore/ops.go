package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/redis/go-redis/v9"
)

// Bind implements [idempotency.KeyIndex.Bind] with one script. A Reply counts as set
// when it is not empty. A server out of memory (maxmemory) refuses the binding with
// an error wrapping [idempotency.ErrFull], and the key stays as it was.
func (s *Store) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := checkArgs(scope, key, "", b); err != nil {
		return fmt.Errorf("redisstore: bind: %w", err)
	}
	switch {
	case token == 0:
		return fmt.Errorf("redisstore: bind: %w: zero token", idempotency.ErrInvalidArgument)
	case b.TaskID == "" && len(b.Reply) == 0:
		return fmt.Errorf("redisstore: bind: %w: the binding has neither a task id nor a reply", idempotency.ErrInvalidArgument)
	}
	v, err := s.run(ctx, "bind", bindScript, []string{s.setName(scope) + key}, formatToken(token), b.TaskID, b.Reply)
	if err != nil {
		return err
	}
	return verdict("bind", v)
}

// Release implements [idempotency.KeyIndex.Release] with one script, which deletes the
// pending claim (and its place in the scope's count, when the store keeps one).
func (s *Store) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("redisstore: release: %w", err)
	}
	if token == 0 {
		return fmt.Errorf("redisstore: release: %w: zero token", idempotency.ErrInvalidArgument)
	}
	set := s.setName(scope)
	v, err := s.run(ctx, "release", releaseScript, []string{set + key, set}, formatToken(token), key)
	if err != nil {
		return err
	}
	return verdict("release", v)
}

// Extend sets the lease of the pending claim of (scope, key) that token owns to end at
// exactly now plus lease, by the store's clock, with one script. When the key is
// absent, past its time to live, released, bound, held under another token, or its
// lease has ended (now at or past its end), it returns an error wrapping
// [idempotency.ErrNotOwner] and changes nothing. lease must be positive and token not
// zero ([idempotency.ErrInvalidArgument]); lease is rounded up to a whole microsecond,
// and capped at 100 years. Extend does not move the key's time to live.
func (s *Store) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("redisstore: extend: %w", err)
	}
	switch {
	case token == 0:
		return fmt.Errorf("redisstore: extend: %w: zero token", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return fmt.Errorf("redisstore: extend: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	v, err := s.run(ctx, "extend", extendScript, []string{s.setName(scope) + key}, formatToken(token), micros(lease))
	if err != nil {
		return err
	}
	return verdict("extend", v)
}

// Lookup implements [idempotency.KeyIndex.Lookup] with one script that writes nothing.
func (s *Store) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: lookup: %w", err)
	}
	v, err := s.run(ctx, "lookup", lookupScript, []string{s.setName(scope) + key})
	if err != nil {
		return idempotency.Record{}, false, err
	}
	f, ok, err := found(v)
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: lookup: %w", err)
	}
	return f.record(), ok, nil
}

// Capacity implements [idempotency.CapacityReporter]. On a store without a per-scope
// bound ([Options.MaxKeysPerScope] zero, the default), which keeps no count, it sends
// nothing and returns an error wrapping [errors.ErrUnsupported]. Otherwise it runs one
// script that writes nothing: Held counts the keys of scope within their time to
// live, pending or bound, and Limit is the bound.
func (s *Store) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := idempotency.CheckLengths(scope, "", idempotency.Binding{}); err != nil {
		return idempotency.Capacity{}, fmt.Errorf("redisstore: capacity: %w", err)
	}
	if s.limit == 0 {
		return idempotency.Capacity{}, fmt.Errorf("redisstore: capacity: the store keeps no per-scope count (Options.MaxKeysPerScope is 0): %w",
			errors.ErrUnsupported)
	}
	v, err := s.run(ctx, "capacity", capacityScript, []string{s.setName(scope)})
	if err != nil {
		return idempotency.Capacity{}, err
	}
	n, ok := v.(int64)
	if !ok {
		return idempotency.Capacity{}, fmt.Errorf("redisstore: capacity: unexpected script result %v", v)
	}
	return idempotency.Capacity{Held: int(n), Limit: int(s.limit)}, nil
}

// verdict turns the answer of a script that binds, releases or extends into the
// operation's error: 1 done (or nothing to do), 0 not the owner, 2 bound to something
// else.
func verdict(op string, v any) error {
	switch n, _ := v.(int64); n {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("redisstore: %s: %w", op, idempotency.ErrNotOwner)
	case 2:
		return fmt.Errorf("redisstore: %s: %w", op, idempotency.ErrAlreadyBound)
	}
	return fmt.Errorf("redisstore: %s: unexpected script result %v", op, v)
}

// run runs script on the keys with the current time (see nowArg) and args.
func (s *Store) run(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) (any, error) {
	return s.runAt(ctx, op, s.nowArg(), script, keys, args...)
}

// runAt runs script on the keys with now and args, in one round trip (EVALSHA, or EVAL
// when the server lacks the script). A ctx already done sends nothing.
func (s *Store) runAt(ctx context.Context, op, now string, script *redis.Script, keys []string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	v, err := script.Run(ctx, s.rdb, keys, append([]any{now}, args...)...).Result()
	if err != nil {
		return nil, s.failed(ctx, op, err)
	}
	return v, nil
}

// failed wraps the error of a command sent for op, with ctx's error when ctx ended
// meanwhile, and reports a server out of memory as [idempotency.ErrFull].
func (s *Store) failed(ctx context.Context, op string, err error) error {
	if redis.HasErrorPrefix(err, "OOM") {
		return fmt.Errorf("redisstore: %s: the server is out of memory (maxmemory): %w", op, idempotency.ErrFull)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("redisstore: %s: %w (%w)", op, err, cerr)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// nowArg returns the scripts' first argument: the time by [Options.Now] in
// microseconds, or empty for the server's clock.
func (s *Store) nowArg() string {
	if s.now == nil {
		return ""
	}
	return strconv.FormatInt(s.now().UnixMicro(), 10)
}

// found reads the answer of a script that returns a record: {0} absent, {1, r} the
// record r, absolute, packed by cmsgpack.
func found(v any) (rec, bool, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return rec{}, false, fmt.Errorf("unexpected script result %v", v)
	}
	if n, _ := a[0].(int64); n == 0 || len(a) != 2 {
		return rec{}, false, nil
	}
	f, err := absolute(a[1])
	return f, err == nil, err
}

// absolute reads a record, absolute, from a script's answer.
func absolute(v any) (rec, error) {
	p, ok := v.(string)
	if !ok {
		return rec{}, fmt.Errorf("unexpected script field %v", v)
	}
	f, err := unpack(p)
	if err == nil && f.relative {
		err = fmt.Errorf("%w: relative in a script's answer", errMalformed)
	}
	return f, err
}
