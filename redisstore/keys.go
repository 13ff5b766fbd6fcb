package redisstore

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// setName returns the name of scope's sorted set of keys: the prefix, then the hash
// tag {s<hex of scope>}. The name of a key's record is setName(scope)+key. A scope's
// keys all share the tag, and so one hash slot, so that one script can claim a key and
// count it in its scope, on Redis Cluster too. Names are unambiguous: the prefix has no
// braces, hex has none, keys have none, and a key is at least 16 bytes, so no record
// name is a set name and no two (scope, key) pairs share a name.
func (s *Store) setName(scope string) string {
	var b strings.Builder
	b.Grow(len(s.prefix) + 3 + 2*len(scope) + idempotency.MaxKeyLength)
	b.WriteString(s.prefix)
	b.WriteString("{s")
	var buf [64]byte
	for len(scope) > 0 {
		n := min(len(scope), len(buf)/2)
		b.Write(hex.AppendEncode(buf[:0], []byte(scope[:n])))
		scope = scope[n:]
	}
	b.WriteByte('}')
	return b.String()
}

// maxDuration caps leases and the TTL, so that times stay exact in the scripts' Lua
// numbers (below 2^53 microseconds since 1970).
const maxDuration = 100 * 365 * 24 * time.Hour

// micros returns d in whole microseconds, rounded up, capped at maxDuration.
func micros(d time.Duration) int64 {
	d = min(d, maxDuration)
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// checkArgs checks the key, and the lengths of the scope, the message id and the
// binding (idempotency.CheckLengths; empty values for those that do not apply).
func checkArgs(scope, key, messageID string, b idempotency.Binding) error {
	if err := idempotency.ValidateKey(key); err != nil {
		return fmt.Errorf("%w: %w", idempotency.ErrInvalidArgument, err)
	}
	return idempotency.CheckLengths(scope, messageID, b)
}

// formatToken returns t as the scripts store it: decimal text, compared as text (Lua
// numbers would lose its low bits).
func formatToken(t idempotency.Token) string { return strconv.FormatUint(uint64(t), 10) }
