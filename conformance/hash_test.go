package conformance

import (
	"hash/fnv"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
)

// TestHashCollisionsCollide: the pairs HashCollisions claims are valid, distinct keys
// that collide under the hash each was found for: a CRC's or polynomial hash's pairs
// whatever stands around them, an FNV pair after the prefix it was found for, with any
// suffix. The FNV functions agree with hash/fnv.
func TestHashCollisionsCollide(t *testing.T) {
	joins := [][2]string{{"", ""}, {"tenant:", ""}, {"", "\x00tenant"}, {"a-much-longer-scope/", "/suffix"}}
	for _, h := range shortHashes {
		for prefix, p := range h.pairs {
			if p[0] == p[1] || len(p[0]) != len(p[1]) {
				t.Errorf("%s: pair %q is not two strings of one length", h.name, p)
			}
			around := joins
			if strings.HasPrefix(h.name, "FNV") {
				around = [][2]string{{prefix, ""}, {prefix, "-rest-of-the-key:tenant"}}
			}
			for _, j := range around {
				a, b := h.sum([]byte(j[0]+p[0]+j[1])), h.sum([]byte(j[0]+p[1]+j[1]))
				if a != b {
					t.Errorf("%s: %q and %q between %q and %q: sums %08x and %08x; want one", h.name, p[0], p[1], j[0], j[1], a, b)
				}
			}
		}
	}
	for _, f := range []struct {
		ours func([]byte) uint32
		std  func() uint32
	}{
		{fnv1a32, func() uint32 { h := fnv.New32a(); h.Write([]byte("conformance")); return h.Sum32() }},
		{fnv132, func() uint32 { h := fnv.New32(); h.Write([]byte("conformance")); return h.Sum32() }},
	} {
		if got, want := f.ours([]byte("conformance")), f.std(); got != want {
			t.Errorf("FNV of %q = %08x; hash/fnv says %08x", "conformance", got, want)
		}
	}
	e := &env{}
	for _, p := range e.hashCollisions() {
		for _, k := range p {
			if err := idempotency.ValidateKey(k); err != nil {
				t.Errorf("key %q: %v", k, err)
			}
		}
	}
}
