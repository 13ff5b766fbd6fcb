package conformance

import (
	"fmt"
	"time"

	"github.com/a2akit/idempotency"
)

// checkStaleTokensAfterLeaseEnd: a claim whose lease ended, nobody having taken it
// over, is still its owner's alone. Bind, Release and Extend under any other token
// (the token of the claim the key had before it was released, a token of another
// abandoned claim, the owner's token plus or minus one, one never issued), through
// either handle, get ErrNotOwner and change nothing; the owner then binds it. An index
// that lets "anyone" bind a claim whose lease ran out lets a stale process record its
// result over the send a retry is about to run.
func checkStaleTokensAfterLeaseEnd(e *env) error {
	ixs, err := e.handles()
	if err != nil {
		return err
	}
	key, lease := e.key(), e.lease()
	start := time.Now()
	stale, tok, err := e.reclaimed(key, lease)
	if err != nil {
		return err
	}
	other, err := e.own("", e.key(), msgA, lease)
	if err != nil {
		return err
	}
	e.since(start).to(lease + e.margin())
	before, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	wrong := []struct {
		what string
		tok  idempotency.Token
	}{
		{"the token of the claim released before", stale},
		{"the token of another abandoned claim", other},
		{"the owner's token plus one", tok + 1},
		{"the owner's token minus one", tok - 1},
		{"a token never issued", tok ^ 0x5a5a5a5a5a5a},
	}
	for i, w := range wrong {
		if w.tok == 0 || w.tok == tok {
			continue
		}
		ix := ixs[i%len(ixs)]
		what := fmt.Sprintf("(%s, %s) of a claim whose lease ended, nobody having taken it over", where("", key), w.what)
		if err := wantErr("Bind"+what, ix.Bind(e.ctx, "", key, w.tok, boundB), idempotency.ErrNotOwner); err != nil {
			return err
		}
		if err := wantErr("Release"+what, ix.Release(e.ctx, "", key, w.tok), idempotency.ErrNotOwner); err != nil {
			return err
		}
		if err := wantErr("Extend"+what, ix.Extend(e.ctx, "", key, w.tok, longLease), idempotency.ErrNotOwner); err != nil {
			return err
		}
		if err := e.wantLeaseKept("", key, msgA, before, "Bind, Release and Extend with "+w.what); err != nil {
			return err
		}
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return fmt.Errorf("by the owner, after its lease ended and other tokens were refused: %w", err)
	}
	_, err = e.wantSame("", key, msgA, boundA)
	return err
}

// takeoverKeys is how many keys TakeoverTokensUnique claims: more than a sharded index
// has shards, so that some share one.
const takeoverKeys = 24

// checkTakeoverTokensUnique: a takeover's token is drawn like a new claim's. Keys are
// claimed, taken over twice (once on the real clock), with fresh keys claimed between
// takeovers, then released and claimed again: every token the index issued, to claims
// and takeovers alike, differs from every other, and each key's earlier tokens no
// longer bind it. A takeover token computed from the old one (the old plus one, the
// next of a per-key counter) meets the token of another claim, or of a later claim of
// the same key.
func checkTakeoverTokensUnique(e *env) error {
	seen := make(map[idempotency.Token]string)
	note := func(tok idempotency.Token, what string) error {
		if prev, dup := seen[tok]; dup {
			return fmt.Errorf("token %d issued twice: to %s and to %s; want every claim and takeover to draw a new token", tok, prev, what)
		}
		seen[tok] = what
		return nil
	}
	lease := e.lease()
	keys := make([]string, takeoverKeys)
	toks := make([][]idempotency.Token, takeoverKeys)
	start := time.Now()
	for i := range keys {
		keys[i] = e.key()
		tok, err := e.own("", keys[i], msgA, lease)
		if err != nil {
			return err
		}
		toks[i] = append(toks[i], tok)
		if err := note(tok, fmt.Sprintf("the claim of key %d", i+1)); err != nil {
			return err
		}
	}
	rounds := 2
	if !e.clock() {
		rounds = 1 // each round waits for a lease to end
	}
	for round := range rounds {
		e.since(start).to(lease + e.margin())
		start = time.Now()
		for i, key := range keys {
			tok, err := e.own("", key, msgA, lease)
			if err != nil {
				return fmt.Errorf("takeover %d of key %d: %w", round+1, i+1, err)
			}
			toks[i] = append(toks[i], tok)
			if err := note(tok, fmt.Sprintf("takeover %d of key %d", round+1, i+1)); err != nil {
				return err
			}
			if i%8 == 0 {
				fresh, err := e.own("", e.key(), msgA, longLease)
				if err != nil {
					return err
				}
				if err := note(fresh, fmt.Sprintf("a fresh key claimed after takeover %d of key %d", round+1, i+1)); err != nil {
					return err
				}
			}
		}
	}
	for i, key := range keys {
		if err := e.release("", key, toks[i][len(toks[i])-1]); err != nil {
			return err
		}
		tok, err := e.own("", key, msgA, longLease)
		if err != nil {
			return fmt.Errorf("after Release: %w", err)
		}
		if err := note(tok, fmt.Sprintf("the claim of key %d after its release", i+1)); err != nil {
			return err
		}
		for n, old := range toks[i] {
			err := e.ix.Bind(e.ctx, "", key, old, boundB)
			if err := wantErr(fmt.Sprintf("Bind(%s) with the token of its claim #%d (taken over or released since)", where("", key), n+1),
				err, idempotency.ErrNotOwner); err != nil {
				return err
			}
		}
		if err := e.bind("", key, tok, boundA); err != nil {
			return err
		}
	}
	return nil
}
