package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

var frontBugs = map[bug]bool{
	bugIgnoresContext: true, bugCtxErrNotWrapped: true, bugLenientInput: true, bugJoinsScopeAndKey: true,
	bugJoinsKeyFirst: true, bugScopeIgnored: true, bugNormalizesScope: true, bugSanitizesScope: true,
	bugTruncatesKeys: true, bugFoldsKeyCase: true, bugTruncatesMessageID: true, bugSlotKeyed: true,
	bugCompactsReply: true, bugCapsReply: true, bugHashKeyed: true, bugCachesBound: true,
}

// front is the layer between an index's methods and its storage, with one slip.
type front struct {
	ix    idempotency.KeyIndex
	bug   bug
	cache *recordCache // with bugCachesBound: this handle's
}

// recordCache is what one handle remembers of the bound keys it read.
type recordCache struct {
	mu   sync.Mutex
	recs map[[2]string]idempotency.Record
}

func newFront(ix idempotency.KeyIndex, b bug) front {
	f := front{ix: ix, bug: b}
	if b == bugCachesBound {
		f.cache = &recordCache{recs: make(map[[2]string]idempotency.Record)}
	}
	return f
}

// cached returns the record this handle remembers of (scope, key).
func (f front) cached(scope, key string) (idempotency.Record, bool) {
	if f.cache == nil {
		return idempotency.Record{}, false
	}
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	r, ok := f.cache.recs[[2]string{scope, key}]
	r.Reply = bytes.Clone(r.Reply)
	return r, ok
}

// remember keeps r, when it is bound, as what (scope, key) holds; a nil r forgets it.
func (f front) remember(scope, key string, r *idempotency.Record) {
	if f.cache == nil {
		return
	}
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	switch {
	case r == nil:
		delete(f.cache.recs, [2]string{scope, key})
	case !r.Pending():
		c := *r
		c.Reply = bytes.Clone(r.Reply)
		f.cache.recs[[2]string{scope, key}] = c
	}
}

func (f front) id(scope, key string) (string, string) {
	switch f.bug {
	case bugJoinsScopeAndKey:
		if scope == "" {
			return "", key
		}
		return "", scope + ":" + key
	case bugJoinsKeyFirst:
		return "", key + "_" + scope
	case bugScopeIgnored:
		return "", key
	case bugNormalizesScope:
		return strings.ToLower(strings.TrimSpace(scope)), key
	case bugSanitizesScope:
		return strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return '_'
		}, scope), key
	case bugTruncatesKeys:
		return scope, key[:min(len(key), 128)]
	case bugFoldsKeyCase:
		return scope, strings.ToLower(key)
	case bugSlotKeyed:
		if idempotency.ValidateKey(key) != nil {
			return scope, key
		}
		return "", fmt.Sprintf("slot-%05d-padding", crc32.ChecksumIEEE([]byte(scope+"\x00"+key))%16384)
	case bugHashKeyed:
		if idempotency.ValidateKey(key) != nil {
			return scope, key
		}
		return "", fmt.Sprintf("fnv1a-%08x-key", fnv1a32([]byte(scope+"\x00"+key)))
	case bugLenientInput:
		if idempotency.ValidateKey(key) == nil {
			return scope, key
		}
		sum := sha256.Sum256([]byte(key))
		return scope, hex.EncodeToString(sum[:])
	}
	return scope, key
}

func (f front) ctx(ctx context.Context) context.Context {
	if f.bug == bugIgnoresContext {
		return context.Background()
	}
	return ctx
}

func (f front) err(ctx context.Context, err error) error {
	if f.bug == bugCtxErrNotWrapped && err != nil && ctx.Err() != nil {
		return fmt.Errorf("store: %v", err)
	}
	return err
}

func (f front) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	switch {
	case f.bug == bugTruncatesMessageID:
		messageID = messageID[:min(len(messageID), 255)]
	case f.bug == bugLenientInput && lease <= 0:
		lease = time.Minute
	case f.bug == bugLenientInput && messageID == "":
		messageID = "anonymous"
	}
	s, k := f.id(scope, key)
	if r, ok := f.cached(s, k); ok && ctx.Err() == nil {
		if r.MessageID != messageID {
			return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: r}, nil
	}
	c, err := f.ix.Claim(f.ctx(ctx), s, k, messageID, lease)
	if err == nil && c.Status == idempotency.HeldBySameMessage {
		f.remember(s, k, &c.Record)
	}
	return c, f.err(ctx, err)
}

func (f front) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	switch {
	case f.bug == bugLenientInput && token == 0:
		return fmt.Errorf("lenient: %w", idempotency.ErrNotOwner)
	case f.bug == bugLenientInput && b.TaskID == "" && len(b.Reply) == 0:
		return nil
	case f.bug == bugCompactsReply && len(b.Reply) > 0:
		var buf bytes.Buffer
		if json.Compact(&buf, b.Reply) == nil {
			b.Reply = buf.Bytes()
		}
	case f.bug == bugCapsReply:
		b.Reply = b.Reply[:min(len(b.Reply), 65535)]
	}
	s, k := f.id(scope, key)
	f.remember(s, k, nil)
	return f.err(ctx, f.ix.Bind(f.ctx(ctx), s, k, token, b))
}

func (f front) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if f.bug == bugLenientInput && token == 0 {
		return nil
	}
	s, k := f.id(scope, key)
	return f.err(ctx, f.ix.Release(f.ctx(ctx), s, k, token))
}

func (f front) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	s, k := f.id(scope, key)
	return f.err(ctx, f.ix.Extend(f.ctx(ctx), s, k, token, lease))
}

func (f front) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	s, k := f.id(scope, key)
	if r, ok := f.cached(s, k); ok && ctx.Err() == nil {
		return r, true, nil
	}
	r, ok, err := f.ix.Lookup(f.ctx(ctx), s, k)
	if err == nil && ok {
		f.remember(s, k, &r)
	}
	return r, ok, f.err(ctx, err)
}

func (f front) HonoursKeys(ctx context.Context) bool {
	return f.ix.(idempotency.Honouring).HonoursKeys(ctx)
}

func (f front) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	s, _ := f.id(scope, "")
	return f.ix.(idempotency.CapacityReporter).Capacity(ctx, s)
}

func (f front) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	r, err := f.ix.(idempotency.Sweeper).PurgeExpired(f.ctx(ctx), p)
	return r, f.err(ctx, err)
}
