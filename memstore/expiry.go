package memstore

import (
	"math"
	"time"
)

// clock returns the current time in nanoseconds since s.base.
func (s *Store) clock() int64 {
	if s.now == nil {
		return int64(time.Since(s.base)) // reads only the monotonic clock
	}
	return int64(s.now().Sub(s.base))
}

// time converts nanoseconds since s.base to a time.
func (s *Store) time(n int64) time.Time { return s.base.Add(time.Duration(n)).Round(0) }

// expired reports whether e is past its time to live at now.
func (s *Store) expired(e *entry, now int64) bool { return s.expiredAt(e.claimedAt, now) }

// expiredAt reports whether a key claimed at claimedAt is past its time to live at now.
func (s *Store) expiredAt(claimedAt, now int64) bool {
	return claimedAt <= now-s.ttl && now-s.ttl <= now // the second test guards overflow
}

// expireHeads pops up to n entries from the head of sh's FIFO that are deleted or
// expired at now, deleting the expired ones, and stops at the first live one. n < 0
// means no bound. The caller holds sh.mu.
func (s *Store) expireHeads(sh *shard, now int64, n int) {
	for ; n != 0 && sh.head < len(sh.fifo); n-- {
		it := sh.fifo[sh.head]
		if !s.expiredAt(it.at, now) && it.e.token != 0 {
			break
		}
		if it.e.token != 0 {
			s.remove(sh, it.e)
		}
		sh.fifo[sh.head] = fifoItem{}
		sh.head++
	}
}

// dropExpired deletes the expired keys of every shard.
func (s *Store) dropExpired() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		now := s.clock()
		s.expireHeads(sh, now, -1)
		if sh.disordered {
			// Expired entries may hide behind younger ones: scan, then restore order.
			sh.each(func(e *entry) bool {
				if s.expired(e, now) {
					s.remove(sh, e)
				}
				return true
			})
			sh.rebuild()
		}
		sh.tidy()
		sh.mu.Unlock()
	}
}

// addSat returns now+d, saturated at the largest time.
func addSat(now int64, d time.Duration) int64 {
	if t := now + int64(d); t >= now {
		return t
	}
	return math.MaxInt64
}
