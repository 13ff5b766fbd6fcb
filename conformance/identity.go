package conformance

import (
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/a2akit/idempotency"
)

// claimsDistinct claims every (scope, key) of ids, each for its own message, and
// wants every one Claimed and then held by its own message: no two are one key.
// what names the set in failure messages.
func (e *env) claimsDistinct(what string, ids [][2]string) ([]idempotency.Token, error) {
	return e.claimsDistinctLookup(what, ids, true)
}

// claimsDistinctLookup is claimsDistinct, which looks every key up afterwards only when
// lookup is set: a merge shows in the Claims already.
func (e *env) claimsDistinctLookup(what string, ids [][2]string, lookup bool) ([]idempotency.Token, error) {
	toks := make([]idempotency.Token, len(ids))
	for i, id := range ids {
		c, err := e.ix.Claim(e.ctx, id[0], id[1], distinctMsg(i), longLease)
		if err != nil {
			return nil, fmt.Errorf("%s: Claim(%s, %q): %w", what, where(id[0], id[1]), distinctMsg(i), err)
		}
		toks[i] = c.Token
		if c.Status != idempotency.Claimed {
			return nil, fmt.Errorf("%s: Claim(%s, %q) = %s; want claimed: the index took it for another key claimed before it "+
				"(compare scopes and keys byte for byte, keep them apart, and never key storage by a short hash alone)",
				what, where(id[0], id[1]), distinctMsg(i), describe(c))
		}
	}
	for i, id := range ids {
		if !lookup {
			break
		}
		if _, err := e.wantHeld(id[0], id[1], distinctMsg(i), pending); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return toks, nil
}

// distinctMsg is the message id of the i-th claim of claimsDistinct.
func distinctMsg(i int) string { return fmt.Sprintf("conformance-message-%d", i) }

// checkKeyLengths: keys of every length from 16 to 255 bytes, each a prefix of the
// longer ones, are that many keys: an index that truncates keys, or keys its storage
// by a prefix, merges them.
func checkKeyLengths(e *env) error {
	long := strings.Repeat(e.key(), 8)[:idempotency.MaxKeyLength]
	// Lengths go to scopes in blocks of 80, so that a bound of 100 keys per scope is
	// not reached, and every truncation merges two keys of one block.
	var ids [][2]string
	scope := ""
	for n := idempotency.MinKeyLength; n <= idempotency.MaxKeyLength; n++ {
		if (n-idempotency.MinKeyLength)%80 == 0 {
			scope = e.scope()
		}
		ids = append(ids, [2]string{scope, long[:n]})
	}
	// Two keys of the greatest length that differ in their last byte.
	ids = append(ids, [2]string{scope, long[:idempotency.MaxKeyLength-1] + "-"})
	return e.distinct("keys of every length, each a prefix of the next", ids)
}

// checkKeyCase: keys that differ only in case are different keys (a case-insensitive
// collation or a lowercased key merges them); binding one leaves the others pending.
func checkKeyCase(e *env) error {
	base := "conformance-Key-" + e.key()[:20]
	keys := []string{base, strings.ToLower(base), strings.ToUpper(base)}
	ids := make([][2]string, len(keys))
	for i, k := range keys {
		ids[i] = [2]string{"", k}
	}
	toks, err := e.claimsDistinct("keys that differ only in case", ids)
	if err != nil {
		return err
	}
	if err := e.bind("", keys[0], toks[0], boundA); err != nil {
		return err
	}
	err = e.ix.Bind(e.ctx, "", keys[1], toks[0], boundB)
	if err := wantErr(fmt.Sprintf("Bind(%s) with the token of key %q", where("", keys[1]), keys[0]), err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	for i := 1; i < len(keys); i++ {
		if _, err := e.wantHeld("", keys[i], distinctMsg(i), pending); err != nil {
			return fmt.Errorf("after a key that differs from it only in case was bound: %w", err)
		}
	}
	return nil
}

// checkMessageIDIdentity: message ids are compared whole and byte for byte: a retry
// with the same long message id is the same message and gets it back exactly, while
// ids that differ only in their last byte, in case or in a trailing space are other
// messages. The longest id is one byte short of [idempotency.MaxMessageIDLength], so
// that the one with a trailing space is within the bound too.
func checkMessageIDIdentity(e *env) error {
	for _, n := range []int{300, 1000, idempotency.MaxMessageIDLength - 1} {
		long := strings.Repeat("conformance-message-é-", n/20+1)[:n]
		key := e.key()
		if _, err := e.own("", key, long, longLease); err != nil {
			return fmt.Errorf("a message id of %d bytes: %w", n, err)
		}
		if _, err := e.wantSame("", key, long, pending); err != nil {
			return fmt.Errorf("a message id of %d bytes: %w", n, err)
		}
		for _, other := range []string{long[:n-1] + "x", long + " ", strings.ToUpper(long)} {
			if err := e.wantOther("", key, other); err != nil {
				return fmt.Errorf("a message id of %d bytes and another that differs from it slightly: %w", n, err)
			}
		}
	}
	return nil
}

// identityScopes are scopes that differ only by case, a space, a separator or the
// Unicode normalization of one letter.
var identityScopes = []string{
	"tenant", "Tenant", "TENANT", "tenant ", " tenant", "ten ant", "tenant\t",
	"tenant/a", "tenant:a", "tenant_a", "tenant-a", "tenant.a", "tenanta", "tenant/A",
	"caf\u00e9", "cafe\u0301",
}

// checkScopeIdentity: the same key in scopes that differ only by case, a space, a
// separator or a Unicode normalization is that many claims.
func checkScopeIdentity(e *env) error {
	key := e.key()
	ids := make([][2]string, len(identityScopes))
	for i, s := range identityScopes {
		ids[i] = [2]string{s, key}
	}
	return e.distinct("the same key in scopes that differ only by case, space, separator or normalization", ids)
}

// joinPairs returns pairs of (scope, key) that a careless join of scope and key (in
// either order, with or without a separator, with or without special-casing the empty
// scope) makes equal, all different.
func joinPairs(k string) [][2]string {
	seen := make(map[[2]string]bool)
	var ids [][2]string
	add := func(p ...[2]string) {
		for _, id := range p {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	for _, sep := range []string{":", "-", "_", ".", ""} {
		add([2]string{"t", "k" + sep + k}, [2]string{"t" + sep + "k", k}) // scope + sep + key
		add([2]string{"", "t" + sep + k}, [2]string{"t", k})              // the empty scope left out
		add([2]string{"s" + sep + "t", k}, [2]string{"t", k + sep + "s"}) // key + sep + scope
	}
	return ids
}

// checkScopeKeyNoCollision: scopes and keys are kept apart, not joined into one
// string: every pair of (scope, key) that a join with ':', '-', '_', '.' or nothing,
// in either order, would make equal is two claims.
func checkScopeKeyNoCollision(e *env) error {
	return e.distinct("(scope, key) pairs that a join would make equal", joinPairs(e.key()))
}

// manyKeys is the number of keys checkManyKeys claims, spread over manyScopes scopes so
// that a bound of 100 keys per scope is not reached.
const (
	manyKeys   = 1000
	manyScopes = 20
)

// checkManyKeys: a thousand random keys over twenty scopes are a thousand claims. An
// index that keys its storage by a short hash of the identity (a slot, a truncated
// digest) without comparing the identity itself merges some of them.
func checkManyKeys(e *env) error {
	scopes := make([]string, manyScopes)
	for i := range scopes {
		scopes[i] = e.scope()
	}
	// Each scope's keys are claimed by a goroutine of their own, so that an index on a
	// database is not slowed by the round trips; a merge shows whatever the order.
	out, err := e.together(manyScopes, func(i int) (idempotency.Claim, error) {
		ids := make([][2]string, manyKeys/manyScopes)
		for j := range ids {
			ids[j] = [2]string{scopes[i], e.key()}
		}
		_, err := e.claimsDistinctLookup(fmt.Sprintf("%d random keys in %d scopes", manyKeys, manyScopes), ids, false)
		return idempotency.Claim{}, err
	})
	return firstErr(out, err)
}

// distinct is claimsDistinct for checks that need no token.
func (e *env) distinct(what string, ids [][2]string) error {
	_, err := e.claimsDistinct(what, ids)
	return err
}

// A shortHash is a 32-bit hash an index might identify keys by, and pairs of
// eight-character strings it confuses.
type shortHash struct {
	name string
	sum  func([]byte) uint32
	// pairs collide, for a CRC, in any two strings that are alike but for them (CRCs
	// are affine over GF(2)), wherever they stand; for FNV, at the start of two
	// strings alike but for them, after the prefix pairs is keyed by.
	pairs map[string][2]string
}

// The CRC-32s are the table's three polynomials; the FNV pairs are keyed by what may
// stand before the key: nothing (the key first, or alone), or a separator after the
// empty scope. The pairs were found by the birthday bound over random strings of the
// key alphabet (TestHashCollisionsCollide shows that they collide).
var shortHashes = []shortHash{
	{"CRC-32 (IEEE)", crc32.ChecksumIEEE, map[string][2]string{"": {"4LBd4PQa", "1GFmG2jG"}}},
	{"CRC-32C (Castagnoli)", crcOf(crc32.Castagnoli), map[string][2]string{"": {"FFJoCgHD", "dYnEWSWj"}}},
	{"CRC-32K (Koopman)", crcOf(crc32.Koopman), map[string][2]string{"": {"p1fMuyJP", "6WOPlfQG"}}},
	{"FNV-1a (32-bit)", fnv1a32, map[string][2]string{
		"": {"34Z6LMe6", "kV4F8Ftj"}, ":": {"8HDSqJur", "RU7rwa76"}, "::": {"s41uU1bn", "oniM3h3d"},
		"\x00": {"CZCNTrAi", "0T3880Mn"}, "/": {"aJMkWZX1", "Xb3aeBtX"}, "|": {"qSCnS4VH", "5VNLpAgW"},
		"-": {"2uCNZBqE", "h91w03HX"}, "_": {"k2nLeCXR", "yQGb1760"}, ".": {"hHDRZEe4", "wRGJCl8k"},
		" ": {"Th97y5ch", "nJ6GYa2z"}, "#": {"q11lYcIO", "SlRmHwwe"}, "\x1f": {"RRgkvNug", "TBsVfTYN"},
	}},
	{"FNV-1 (32-bit)", fnv132, map[string][2]string{
		"": {"G56Lt02k", "EGUy1skL"}, ":": {"xdT7Nl2F", "Y6PgV7Db"}, "::": {"kHvtifkZ", "hla1HmJH"},
		"\x00": {"UCiJWICE", "yPS1BR4V"}, "/": {"Z0Y95zPm", "DoNFBwPF"}, "|": {"Qcj5IdRl", "82oFtHlw"},
		"-": {"WIF1GKZg", "TPxVb5IJ"}, "_": {"xfI7U7bR", "AfHGeu1y"}, ".": {"MCiMYDoc", "cc3PcYGA"},
		" ": {"TCpjjmsv", "aDkh43TD"}, "#": {"QkAPVY6i", "0puEUZR6"}, "\x1f": {"WvCwUMvO", "Fjdi9Oz9"},
	}},
	// Polynomial string hashes (h = h*31 + c, Java's hashCode; h = h*33 + c, djb2) are
	// linear too: "Aa" and "BB" weigh the same under 31, "B0" and "AQ" under 33.
	{"Java's String.hashCode", polyHash(31), map[string][2]string{"": {"AaAaAaAa", "BBBBBBBB"}}},
	{"djb2", polyHash(33), map[string][2]string{"": {"B0B0B0B0", "AQAQAQAQ"}}},
}

func crcOf(poly uint32) func([]byte) uint32 {
	t := crc32.MakeTable(poly)
	return func(b []byte) uint32 { return crc32.Checksum(b, t) }
}

func fnv1a32(b []byte) uint32 {
	h := uint32(fnvBasis)
	for _, c := range b {
		h = (h ^ uint32(c)) * fnvPrime
	}
	return h
}

func fnv132(b []byte) uint32 {
	h := uint32(fnvBasis)
	for _, c := range b {
		h = h*fnvPrime ^ uint32(c)
	}
	return h
}

// The parameters of 32-bit FNV.
const (
	fnvBasis = 2166136261
	fnvPrime = 16777619
)

func polyHash(m uint32) func([]byte) uint32 {
	return func(b []byte) uint32 {
		var h uint32
		for _, c := range b {
			h = h*m + uint32(c)
		}
		return h
	}
}

// hashCollisions returns pairs of keys of the empty scope that a 32-bit hash of
// (scope, key) takes for one, whichever of shortHashes it is and however the index
// joins scope and key: each pair is two random keys alike but for the start, which is
// a colliding pair of the hash.
func (e *env) hashCollisions() [][2]string {
	var pairs [][2]string
	for _, h := range shortHashes {
		for _, p := range h.pairs {
			rest := "-" + e.key()[:20]
			pairs = append(pairs, [2]string{p[0] + rest, p[1] + rest})
		}
	}
	return pairs
}

// checkHashCollisions: keys that a 32-bit hash of (scope, key) confuses are distinct
// claims: pairs that collide under CRC-32 (IEEE, Castagnoli, Koopman), Java's
// hashCode and djb2 however scope and key are joined, and under FNV-1 and FNV-1a with
// the key first, alone, or after the empty scope and any of a dozen separators. An
// index that keys its storage by such a hash alone, never comparing the identity
// itself, merges a pair: a retry of one send is then answered with another's result.
// (ManyKeys catches shorter hashes by the birthday bound.)
func checkHashCollisions(e *env) error {
	var ids [][2]string
	for _, p := range e.hashCollisions() {
		ids = append(ids, [2]string{"", p[0]}, [2]string{"", p[1]})
	}
	return e.distinct("pairs of keys whose 32-bit hashes collide", ids)
}
