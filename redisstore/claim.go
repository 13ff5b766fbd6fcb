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

// Claim implements [idempotency.KeyIndex.Claim]. Lease is rounded up to a whole
// microsecond, and capped at 100 years.
//
// On a store without a per-scope bound (the default) it sends one command,
// SET name record PX ttl NX GET, which writes the new claim when the key is absent and
// otherwise returns the record held, unchanged. The store decides from that record
// alone when the key is held by another message, was claimed by this very call (the
// client sent the SET again after a lost answer), or is bound for this message; only
// a pending claim of this message (a retry in flight, or a takeover once its lease
// has ended) needs the server's clock, and then one script decides, as every claim
// does on a store with a bound (the script counts the key in its scope).
func (s *Store) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if err := checkArgs(scope, key, messageID, idempotency.Binding{}); err != nil {
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
	}
	switch {
	case messageID == "":
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w: empty message id", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	token := idempotency.RandomToken()
	f := rec{m: messageID, k: formatToken(token), relative: true, l: micros(lease), e: s.ttl}
	now := ""
	if s.now != nil {
		n := s.now().UnixMicro()
		now = strconv.FormatInt(n, 10)
		f.relative, f.c, f.l, f.e = false, n, n+f.l, n+1000*s.ttl
	}
	packed := string(f.pack(make([]byte, 0, 48+len(messageID))))
	set := s.setName(scope)
	if s.limit == 0 {
		c, decided, err := s.claimAbsent(ctx, set+key, packed, f, token)
		if decided || err != nil {
			return c, err
		}
	}
	v, err := s.runAt(ctx, "claim", now, claimScript, []string{set + key, set},
		packed, messageID, f.k, micros(lease), s.ttl, key, s.limit)
	if err != nil {
		return idempotency.Claim{}, err
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: unexpected script result %v", v)
	}
	switch status, _ := a[0].(int64); status {
	case 1:
		return idempotency.Claim{Status: idempotency.Claimed, Token: token}, nil
	case 2:
		held, err := absolute(a[len(a)-1])
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: held.record()}, nil
	case 3:
		return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
	case 0:
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: the scope holds %d keys: %w", s.limit, idempotency.ErrFull)
	}
	return idempotency.Claim{}, fmt.Errorf("redisstore: claim: unexpected script result %v", v)
}

// claimAbsent sends the new claim f (of token), packed, by SET NX GET (one command, no script),
// and decides from the record held, if any, what it can without the server's clock.
// decided is false when the script must decide.
func (s *Store) claimAbsent(ctx context.Context, name, packed string, f rec, token idempotency.Token) (c idempotency.Claim, decided bool, err error) {
	if err := ctx.Err(); err != nil {
		return c, true, fmt.Errorf("redisstore: claim: %w", err)
	}
	v, err := s.rdb.Do(ctx, "set", name, packed, "px", s.ttl, "nx", "get").Text()
	switch {
	case errors.Is(err, redis.Nil): // the key was absent: f holds it now
		return idempotency.Claim{Status: idempotency.Claimed, Token: token}, true, nil
	case err != nil:
		return c, true, s.failed(ctx, "claim", err)
	}
	held, err := unpack(v)
	switch {
	case err != nil:
		return c, true, fmt.Errorf("redisstore: claim: %w", err)
	case s.now != nil && (held.relative || f.c >= held.e):
		// On a given clock Redis may still hold a key past its time to live: the
		// script overwrites it.
		return c, false, nil
	case held.k == f.k: // this very claim, its SET sent again after a lost answer
		return idempotency.Claim{Status: idempotency.Claimed, Token: token}, true, nil
	case held.m != f.m:
		return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, true, nil
	case held.bound() && !held.relative: // a bind writes the record absolute
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: held.record()}, true, nil
	}
	return c, false, nil
}
