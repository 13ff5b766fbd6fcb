package memstore

import (
	"strings"
	"sync/atomic"
)

// scopeCount counts the keys one scope holds. It lives in Store.scopes while the
// scope holds keys; when the count drops to zero it is retired (set to -1) and removed,
// so that scopes seen once do not accumulate.
type scopeCount struct {
	held atomic.Int64
}

// reserve counts one more key in scope, and reports false when the scope is full. The
// count is exact: it never exceeds the limit, however many claims race. A scope's
// count, while it is in Store.scopes, is charged against Options.MaxBytes (always: the
// key's own charge, which the caller makes next, is what may be refused).
func (s *Store) reserve(scope string) bool {
	for {
		v, ok := s.scopes.Load(scope)
		if !ok {
			var loaded bool
			if v, loaded = s.scopes.LoadOrStore(strings.Clone(scope), new(scopeCount)); !loaded {
				s.used.Add(scopeCost(scope))
			}
		}
		c := v.(*scopeCount)
		for {
			n := c.held.Load()
			if n < 0 {
				// Retired by a concurrent unreserve: make sure it is gone, and start over.
				s.scopes.CompareAndDelete(scope, c)
				break
			}
			if s.limit > 0 && n >= s.limit {
				return false
			}
			if c.held.CompareAndSwap(n, n+1) {
				return true
			}
		}
	}
}

// unreserve gives back a key that reserve counted in scope.
func (s *Store) unreserve(scope string) {
	// The count is in the map: it holds at least this key, so it is not retired.
	v, _ := s.scopes.Load(scope)
	c := v.(*scopeCount)
	if c.held.Add(-1) == 0 && c.held.CompareAndSwap(0, -1) {
		s.scopes.CompareAndDelete(scope, c)
		s.used.Add(-scopeCost(scope))
	}
}

// scopeCost is what the count of scope counts against Options.MaxBytes.
func scopeCost(scope string) int64 { return ScopeOverhead + int64(len(scope)) }
