package memstore

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/a2akit/idempotency"
)

const (
	shardBits = 8
	numShards = 1 << shardBits
)

// entry is one held key. Its token is zero once it has left its shard (released,
// expired or purged); the shard's FIFO may still point to it until it is popped.
//
// An entry takes 64 bytes and its text one more allocation. With its map slot and
// FIFO slot, a bound key with a 32-byte key, a short scope and UUID message and task
// ids takes about 225 bytes (see BenchmarkHeldKeyMemory).
type entry struct {
	// text is, in one allocation, key + "\x00" + scope + messageID, then the bound task
	// id and reply JSON. The map key is text[:keyLen] (keys cannot contain a NUL byte,
	// so the first NUL ends the key). The key is pending while the text ends with the
	// message id: a binding is never empty.
	text      string
	hash      uint64 // seeded hash of the map key
	claimedAt int64  // nanoseconds since Store.base
	leaseEnd  int64  // nanoseconds since Store.base; meaningless once bound
	token     idempotency.Token
	keyLen    uint32 // end of the map key in text
	msgEnd    uint32 // end of the message id
	taskEnd   uint32 // end of the task id, where the reply starts
}

func (e *entry) mapKey() string    { return e.text[:e.keyLen] }
func (e *entry) messageID() string { return e.text[e.keyLen:e.msgEnd] }
func (e *entry) taskID() string    { return e.text[e.msgEnd:e.taskEnd] }
func (e *entry) reply() string     { return e.text[e.taskEnd:] }
func (e *entry) pending() bool     { return len(e.text) == int(e.msgEnd) }

func (e *entry) scope() string {
	k := e.mapKey()
	return k[strings.IndexByte(k, 0)+1:]
}

// shard is one independently locked part of the store.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte // keep shards on separate cache lines
}

type shardState struct {
	mu sync.Mutex
	// keys maps the 64-bit seeded hash of a map key to its entry. Keying the map by
	// hash keeps its slots small and its growth cheap: it never reads the keys' text.
	// An entry whose hash another entry in keys already has goes to spill, by map key;
	// spill is nil while empty, which with 64-bit hashes is almost always.
	keys  map[uint64]*entry
	spill map[string]*entry
	n     int // entries in keys and spill
	peak  int // the most entries the shard has held since keys was made
	// fifo holds the shard's entries in the order they were claimed, from fifo[head]
	// on. With a monotonic clock that is the order of claim times, so the expired
	// entries are at the head; disordered records that the clock went backwards.
	fifo       []fifoItem
	head       int
	last       int64 // latest claim time pushed to fifo
	disordered bool
	id         uint64 // the shard's index, the low bits of its tokens
	seq        uint64 // tokens issued by this shard
}

// fifoItem is an entry and its claim time, so that the FIFO's head can be checked for
// expiry without reading the entry.
type fifoItem struct {
	e  *entry
	at int64
}

// get returns the entry for map key k, whose hash is h, or nil.
func (sh *shard) get(h uint64, k []byte) *entry {
	if e := sh.keys[h]; e != nil && e.mapKey() == string(k) {
		return e
	}
	if sh.spill != nil {
		return sh.spill[string(k)]
	}
	return nil
}

// put adds e, whose map key is absent.
func (sh *shard) put(e *entry) {
	if sh.keys[e.hash] == nil {
		sh.keys[e.hash] = e
	} else {
		if sh.spill == nil {
			sh.spill = make(map[string]*entry)
		}
		sh.spill[e.mapKey()] = e
	}
	sh.n++
	sh.peak = max(sh.peak, sh.n)
}

// del removes e, which is present, and marks it deleted.
func (sh *shard) del(e *entry) {
	if sh.keys[e.hash] == e {
		delete(sh.keys, e.hash)
	} else {
		delete(sh.spill, e.mapKey())
		if len(sh.spill) == 0 {
			sh.spill = nil
		}
	}
	e.token = 0
	sh.n--
}

// each calls f for every entry of the shard until f returns false. f may delete the
// entry it is given.
func (sh *shard) each(f func(e *entry) bool) {
	for _, e := range sh.keys {
		if !f(e) {
			return
		}
	}
	for _, e := range sh.spill {
		if !f(e) {
			return
		}
	}
}

func (sh *shard) nextToken() idempotency.Token {
	sh.seq++
	return idempotency.Token(sh.seq<<shardBits | sh.id)
}

// push appends e to the FIFO.
func (sh *shard) push(e *entry) {
	if e.claimedAt < sh.last {
		sh.disordered = true
	}
	sh.last = max(sh.last, e.claimedAt)
	sh.fifo = append(sh.fifo, fifoItem{e, e.claimedAt})
}

// shrinkMin is the size below which the map and the FIFO are not shrunk.
const shrinkMin = 256

// tidy reclaims space: the FIFO's popped prefix once it is half the slice, its deleted
// entries once they outnumber live ones, and the memory of a map or FIFO that holds
// less than a quarter of what it once held (Go maps never shrink on their own). Each
// is amortized O(1) per entry.
func (sh *shard) tidy() {
	switch n := len(sh.fifo) - sh.head; {
	case n > 2*sh.n+64:
		sh.compact()
	case sh.head > 64 && 2*sh.head >= len(sh.fifo):
		copy(sh.fifo, sh.fifo[sh.head:])
		clear(sh.fifo[n:])
		sh.fifo, sh.head = sh.fifo[:n], 0
	}
	if sh.head == 0 && cap(sh.fifo) > shrinkMin && 4*len(sh.fifo) < cap(sh.fifo) {
		sh.fifo = slices.Clone(sh.fifo)
	}
	if sh.peak > shrinkMin && 4*sh.n < sh.peak {
		// Not maps.Clone, which keeps the map's size.
		m := make(map[uint64]*entry, len(sh.keys))
		maps.Copy(m, sh.keys)
		sh.keys, sh.peak = m, sh.n
	}
}

// compact removes deleted entries from the FIFO, keeping the order of the others.
func (sh *shard) compact() {
	live := sh.fifo[:0]
	for _, it := range sh.fifo[sh.head:] {
		if it.e.token != 0 {
			live = append(live, it)
		}
	}
	clear(sh.fifo[len(live):])
	sh.fifo, sh.head = live, 0
}

// rebuild refills the FIFO with the live entries in claim-time order.
func (sh *shard) rebuild() {
	clear(sh.fifo)
	sh.fifo, sh.head = sh.fifo[:0], 0
	sh.each(func(e *entry) bool {
		sh.fifo = append(sh.fifo, fifoItem{e, e.claimedAt})
		return true
	})
	slices.SortFunc(sh.fifo, func(a, b fifoItem) int { return cmp.Compare(a.at, b.at) })
	sh.disordered = false
	if n := len(sh.fifo); n > 0 {
		sh.last = sh.fifo[n-1].at
	}
}
