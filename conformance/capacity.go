package conformance

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// checkHonoursKeys: an index that implements [idempotency.Honouring] reports that it
// honours keys; otherwise the middleware would refuse every keyed send, and the rest
// of the suite would test an index nobody uses.
func checkHonoursKeys(e *env) error {
	h, ok := e.ix.(idempotency.Honouring)
	if !ok {
		return skipf("the index does not implement idempotency.Honouring")
	}
	if !h.HonoursKeys(e.ctx) {
		return errors.New("HonoursKeys = false; want true for the index under test")
	}
	return nil
}

// maxFill bounds the number of keys the capacity checks claim to fill a scope.
const maxFill = 10000

// capacity returns the index's CapacityReporter. It skips when the index has none,
// and returns errNoCount (a skip) when the index keeps no count: its Capacity returns
// an error wrapping errors.ErrUnsupported, as the contract allows.
func (e *env) capacity() (idempotency.CapacityReporter, error) {
	c, ok := e.ix.(idempotency.CapacityReporter)
	if !ok {
		return nil, skipf("the index does not implement idempotency.CapacityReporter")
	}
	if _, err := c.Capacity(e.ctx, e.scope()); errors.Is(err, errors.ErrUnsupported) {
		return nil, errNoCount
	}
	return c, nil
}

// errNoCount is capacity's skip for an index that keeps no count of keys per scope.
var errNoCount error = &skipError{reason: "the index keeps no count of keys per scope (its Capacity returns errors.ErrUnsupported)"}

func (e *env) wantHeldCount(c idempotency.CapacityReporter, scope string, want int) (idempotency.Capacity, error) {
	got, err := c.Capacity(e.ctx, scope)
	if err != nil {
		return got, fmt.Errorf("Capacity(%q): %w", scope, err)
	}
	if got.Held != want || got.Limit < 0 || (got.Limit > 0 && got.Held > got.Limit) {
		return got, fmt.Errorf("Capacity(%q) = %+v; want Held %d and a Limit that is zero or at least Held", scope, got, want)
	}
	return got, nil
}

// checkCapacityCountsClaims: Capacity counts the keys a scope holds, pending or bound,
// and only that scope's; a released key no longer counts.
func checkCapacityCountsClaims(e *env) error {
	c, err := e.capacity()
	if err != nil {
		return err
	}
	scope, other := e.scope(), e.scope()
	if _, err := e.wantHeldCount(c, scope, 0); err != nil {
		return fmt.Errorf("fresh scope: %w", err)
	}
	var toks []idempotency.Token
	var keys []string
	for range 3 {
		key := e.key()
		tok, err := e.own(scope, key, msgA, longLease)
		if err != nil {
			return err
		}
		keys, toks = append(keys, key), append(toks, tok)
	}
	if err := e.bind(scope, keys[0], toks[0], boundA); err != nil {
		return err
	}
	if _, err := e.own(other, e.key(), msgA, longLease); err != nil {
		return err
	}
	if _, err := e.wantHeldCount(c, scope, 3); err != nil {
		return fmt.Errorf("after 3 claims (one bound) and a claim in another scope: %w", err)
	}
	if err := e.release(scope, keys[2], toks[2]); err != nil {
		return err
	}
	if _, err := e.wantHeldCount(c, scope, 2); err != nil {
		return fmt.Errorf("after a Release: %w", err)
	}
	// The empty scope is a scope like any other. The storage may hold keys of the empty
	// scope already, so only the change is judged.
	before, err := c.Capacity(e.ctx, "")
	if err != nil {
		return fmt.Errorf("Capacity(\"\"): %w", err)
	}
	for range 2 {
		if _, err := e.own("", e.key(), msgA, longLease); err != nil {
			return err
		}
	}
	if _, err := e.wantHeldCount(c, "", before.Held+2); err != nil {
		return fmt.Errorf("after 2 claims in the empty scope, which held %d keys: %w", before.Held, err)
	}
	return nil
}

// fillable returns the Capacity of a fresh scope that a check can fill: errUnbounded
// when the index reports no bound, and a skip when the bound is too large to fill.
func (e *env) fillable(c idempotency.CapacityReporter, scope string) (idempotency.Capacity, error) {
	capa, err := e.wantHeldCount(c, scope, 0)
	switch {
	case err != nil:
		return capa, fmt.Errorf("fresh scope: %w", err)
	case capa.Limit == 0:
		return capa, errUnbounded
	case capa.Limit > maxFill:
		return capa, skipf("the index bounds a scope to %d keys, more than the %d this check fills; "+
			"build the index with a smaller bound to check it", capa.Limit, maxFill)
	}
	return capa, nil
}

// boundedScope is the prologue of the checks that need a bound: the index's
// CapacityReporter, a fresh scope and its Capacity. It skips when the index reports
// no capacity, no bound, or a bound too large to fill.
func (e *env) boundedScope() (idempotency.CapacityReporter, string, idempotency.Capacity, error) {
	c, err := e.capacity()
	if err != nil {
		return nil, "", idempotency.Capacity{}, err
	}
	scope := e.scope()
	capa, err := e.fillable(c, scope)
	if errors.Is(err, errUnbounded) {
		return c, scope, capa, skipf("%v", err)
	}
	return c, scope, capa, err
}

// wantFull claims key, new to a full scope, and wants ErrFull; held says what fills
// the scope.
func (e *env) wantFull(scope, key, held string) error {
	got, err := e.ix.Claim(e.ctx, scope, key, msgB, longLease)
	return wantErr(fmt.Sprintf("Claim of a new key in a scope full of %s (result %s)", held, describe(got)), err, idempotency.ErrFull)
}

// fill claims a scope's whole capacity, binding every other key, and returns the keys
// and tokens. It returns errUnbounded when the index has no bound, and skips when the
// bound is too large to fill.
func (e *env) fill(c idempotency.CapacityReporter, scope string) ([]string, []idempotency.Token, error) {
	capa, err := e.fillable(c, scope)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, capa.Limit)
	toks := make([]idempotency.Token, capa.Limit)
	for i := range keys {
		keys[i] = e.key()
		if toks[i], err = e.own(scope, keys[i], msgA, longLease); err != nil {
			return nil, nil, fmt.Errorf("claim %d of %d (the scope's bound): %w", i+1, capa.Limit, err)
		}
		if i%2 == 1 {
			if err := e.bind(scope, keys[i], toks[i], boundA); err != nil {
				return nil, nil, err
			}
		}
	}
	if _, err := e.wantHeldCount(c, scope, capa.Limit); err != nil {
		return nil, nil, fmt.Errorf("full scope: %w", err)
	}
	return keys, toks, nil
}

// errUnbounded is fill's error when the index reports no bound (Limit 0).
var errUnbounded = errors.New("the index reports no bound on keys per scope (Capacity.Limit is 0)")

// An index that reports no bound must take unboundedProbe keys in one scope, and as
// many more, up to unboundedDeep, as it takes within unboundedTime: a fast index is
// probed past the default bounds an index might enforce without saying so.
const (
	unboundedProbe = 1000
	unboundedDeep  = 1 << 17
	unboundedTime  = time.Second
)

// probeUnbounded claims keys in one scope of an index that reports no bound (c nil:
// that keeps no count), and wants every one Claimed: a reported Limit of 0, or
// errors.ErrUnsupported, is a promise.
func (e *env) probeUnbounded(c idempotency.CapacityReporter) error {
	scope := e.scope()
	var claimed atomic.Int64
	refused := func(err error) error {
		return fmt.Errorf("claim %d in one scope of an index whose Capacity reports no bound (Limit 0, or errors.ErrUnsupported): %w; "+
			"report the bound the index enforces", claimed.Load()+1, err)
	}
	for range unboundedProbe {
		if _, err := e.own(scope, e.key(), msgA, longLease); err != nil {
			return refused(err)
		}
		claimed.Add(1)
	}
	deadline := time.Now().Add(unboundedTime)
	const workers = 8
	out, err := e.together(workers, func(int) (idempotency.Claim, error) {
		for time.Now().Before(deadline) && claimed.Load() < unboundedDeep {
			c, err := e.ix.Claim(e.ctx, scope, e.key(), msgA, longLease)
			if err != nil {
				return c, refused(err)
			}
			if c.Status != idempotency.Claimed {
				return c, fmt.Errorf("Claim of a fresh key = %s; want claimed", describe(c))
			}
			claimed.Add(1)
		}
		return idempotency.Claim{}, nil
	})
	if err := firstErr(out, err); err != nil || c == nil {
		return err
	}
	_, err = e.wantHeldCount(c, scope, int(claimed.Load()))
	return err
}

// checkCapacityFull: when a scope holds as many keys as the index allows, a Claim of a
// new key returns ErrFull and evicts nothing; retries of the keys held still get
// their answers, another message is still refused, other scopes are unaffected, and a
// release makes room. An index that reports no bound must take a thousand keys in one
// scope without ErrFull.
func checkCapacityFull(e *env) error {
	c, err := e.capacity()
	if err == errNoCount {
		return e.probeUnbounded(nil) // an index that counts nothing bounds nothing
	}
	if err != nil {
		return err
	}
	scope := e.scope()
	keys, toks, err := e.fill(c, scope)
	if errors.Is(err, errUnbounded) {
		return e.probeUnbounded(c)
	}
	if err != nil {
		return err
	}
	if err := e.wantOther(scope, keys[0], msgB); err != nil {
		return fmt.Errorf("another message in a full scope (a key already held is not a new key): %w", err)
	}
	extra := e.key()
	if err := e.wantFull(scope, extra, "keys held"); err != nil {
		return err
	}
	if err := e.wantAbsent(scope, extra); err != nil {
		return err
	}
	for i, key := range keys {
		b := pending
		if i%2 == 1 {
			b = boundA
		}
		if _, err := e.wantHeld(scope, key, msgA, b); err != nil {
			return fmt.Errorf("key %d of a full scope, after a Claim was refused: %w", i+1, err)
		}
	}
	if _, err := e.wantSame(scope, keys[0], msgA, pending); err != nil {
		return fmt.Errorf("a retry in a full scope: %w", err)
	}
	if len(keys) > 1 {
		if _, err := e.wantSame(scope, keys[1], msgA, boundA); err != nil {
			return fmt.Errorf("a retry in a full scope: %w", err)
		}
	}
	if _, err := e.own(e.scope(), extra, msgB, longLease); err != nil {
		return fmt.Errorf("another scope, while one is full: %w", err)
	}
	if err := e.release(scope, keys[0], toks[0]); err != nil {
		return err
	}
	if _, err := e.own(scope, extra, msgB, longLease); err != nil {
		return fmt.Errorf("after a Release in a full scope: %w", err)
	}
	return nil
}

// checkCapacityIgnoresExpired: keys past their time to live count as absent, so they do
// not keep a scope full.
func checkCapacityIgnoresExpired(e *env) error {
	start := time.Now()
	c, scope, _, err := e.boundedScope()
	if err != nil {
		return err
	}
	if _, _, err := e.fill(c, scope); err != nil {
		return err
	}
	e.since(start).to(e.h.TTL + e.ttlMargin())
	if _, err := e.own(scope, e.key(), msgB, longLease); err != nil {
		return fmt.Errorf("in a scope full of keys past their TTL: %w", err)
	}
	return nil
}

// checkCapacityFullAbandoned: a scope full of abandoned claims (pending, lease ended)
// is still full: a new key gets ErrFull and no claim is evicted; a retry takes one
// over (a takeover is not a new key), another message is refused, and the old owner
// of a claim nobody took over still binds it.
func checkCapacityFullAbandoned(e *env) error {
	_, scope, capa, err := e.boundedScope()
	if err != nil {
		return err
	}
	keys, toks, err := e.abandon(scope, capa.Limit)
	if err != nil {
		return fmt.Errorf("filling a scope bounded to %d keys: %w", capa.Limit, err)
	}
	if err := e.wantFull(scope, e.key(), "abandoned claims (never evict a pending claim)"); err != nil {
		return err
	}
	for i, key := range keys {
		if _, err := e.wantHeld(scope, key, msgA, pending); err != nil {
			return fmt.Errorf("abandoned claim %d of a full scope, after a Claim was refused: %w", i+1, err)
		}
	}
	if _, err := e.own(scope, keys[0], msgA, longLease); err != nil {
		return fmt.Errorf("a takeover in a full scope (a key already held is not a new key): %w", err)
	}
	if len(keys) > 1 {
		if err := e.wantOther(scope, keys[1], msgB); err != nil {
			return fmt.Errorf("another message in a full scope: %w", err)
		}
		if err := e.bind(scope, keys[1], toks[1], boundA); err != nil {
			return fmt.Errorf("the owner of an abandoned claim in a full scope, nobody having taken it over: %w", err)
		}
	}
	return nil
}

// checkCapacityConcurrent: racers claim distinct keys of one scope at once, twice as
// many as the bound, across both handles when the harness offers two: exactly the
// bound are Claimed, the others get ErrFull, and Capacity counts the bound.
func checkCapacityConcurrent(e *env) error {
	c, scope, capa, err := e.boundedScope()
	if err != nil {
		return err
	}
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	n := 2 * capa.Limit
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key()
	}
	var claimed int
	for first := 0; first < n; first += racers {
		out, err := e.together(min(racers, n-first), func(i int) (idempotency.Claim, error) {
			return ixs[i%len(ixs)].Claim(e.ctx, scope, keys[first+i], msgA, longLease)
		})
		if err != nil {
			return err
		}
		for _, o := range out {
			switch {
			case o.err == nil && o.c.Status == idempotency.Claimed:
				claimed++
			case !errors.Is(o.err, idempotency.ErrFull):
				return fmt.Errorf("concurrent Claims of distinct keys in a scope bounded to %d keys: Claim = %s, %v; want claimed or ErrFull",
					capa.Limit, describe(o.c), o.err)
			}
		}
	}
	if claimed != capa.Limit {
		return fmt.Errorf("%d concurrent Claims of distinct keys in a scope bounded to %d keys: %d claimed; want exactly %d "+
			"(count and insert in one atomic step)", n, capa.Limit, claimed, capa.Limit)
	}
	_, err = e.wantHeldCount(c, scope, capa.Limit)
	return err
}

// checkCapacityReclaimExpired: a key claimed afresh once its TTL passed takes back the
// place it held: when every key of a full scope expired and was claimed again, twice
// over, the scope counts exactly its bound, a new key is refused, and a release makes
// room for exactly one. An index that counts the new claim without giving back the
// expired key's place fills the scope with phantoms.
func checkCapacityReclaimExpired(e *env) error {
	c, scope, capa, err := e.boundedScope()
	if err != nil {
		return err
	}
	keys, toks, err := e.fill(c, scope)
	if err != nil {
		return err
	}
	for round := range 2 {
		e.since(time.Now()).to(e.h.TTL + e.ttlMargin())
		for i, key := range keys {
			if toks[i], err = e.own(scope, key, msgA, longLease); err != nil {
				return fmt.Errorf("round %d: a key of a full scope claimed again past its TTL: %w", round+1, err)
			}
		}
		if _, err := e.wantHeldCount(c, scope, capa.Limit); err != nil {
			return fmt.Errorf("round %d: after all %d keys of a full scope expired and were claimed again: %w", round+1, capa.Limit, err)
		}
	}
	if err := e.wantFull(scope, e.key(), "keys claimed again"); err != nil {
		return err
	}
	if err := e.release(scope, keys[0], toks[0]); err != nil {
		return err
	}
	if _, err := e.own(scope, e.key(), msgB, longLease); err != nil {
		return fmt.Errorf("after a Release in a scope whose keys were all claimed again past their TTL (an expired key claimed again "+
			"must give its place back): %w", err)
	}
	return e.wantFull(scope, e.key(), "keys claimed again, after one Release made room for one")
}
