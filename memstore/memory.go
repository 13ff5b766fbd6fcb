package memstore

import "github.com/a2akit/idempotency"

// DefaultMaxBytes is the memory bound of a [Store] whose [Options.MaxBytes] is zero:
// 256 MiB, about 990,000 keys of the usual size (UUID ids, a 32-byte key, a short
// tenant), or 480,000 when every key has a tenant of its own.
const DefaultMaxBytes = 256 << 20

// What a [Store] counts against [Options.MaxBytes]. They are upper bounds of the heap
// measured by BenchmarkHeldKeyMemory (on amd64, Go 1.26): 225 bytes for a bound key of
// the usual size in a shared scope (counted as 271), and 400 when each key has a
// 16-byte scope of its own (counted as 555).
const (
	// KeyOverhead is what a held key counts besides its text (key, scope, message id,
	// task id and reply): its entry, its map and FIFO slots and allocation slack.
	KeyOverhead = 160
	// ScopeOverhead is what a scope that holds keys counts besides its name (counted
	// once more): the count of its keys and its slot in the map of counts.
	ScopeOverhead = 256
	// MaxKeyBytes is the most one key can count: a key of the longest scope, in a
	// scope of its own, with the longest message id, task id and reply the store
	// accepts. It is the worst case of the memory one key holds.
	MaxKeyBytes = KeyOverhead + ScopeOverhead + 2*idempotency.MaxScopeLength + idempotency.MaxKeyLength + 1 +
		idempotency.MaxMessageIDLength + idempotency.MaxTaskIDLength + idempotency.MaxReplyLength
)

// Bytes returns the memory the store counts against [Options.MaxBytes] now (whether
// or not it is bounded): the text of its keys plus [KeyOverhead] per key, and the
// names of its scopes plus [ScopeOverhead] per scope, including expired keys not yet
// deleted.
func (s *Store) Bytes() int64 { return s.used.Load() }

// keyCost is what a key whose text is n bytes counts against Options.MaxBytes.
func keyCost(n int) int64 { return KeyOverhead + int64(n) }

// charge counts n more bytes, and reports false, counting nothing, when the store is
// bounded and they do not fit. A negative n always fits.
func (s *Store) charge(n int64) bool {
	for {
		used := s.used.Load()
		if n > 0 && s.max > 0 && used+n > s.max {
			return false
		}
		if s.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// uncharge gives back what e counts.
func (s *Store) uncharge(e *entry) { s.used.Add(-keyCost(len(e.text))) }
