package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix begins the name of every Redis key a [Store] writes unless
// [Options.Prefix] says otherwise.
const DefaultPrefix = "a2a-idem:"

// DefaultMaxKeysPerScope is the per-scope bound of a [Store] whose
// [Options.MaxKeysPerScope] is zero, as in memstore.
const DefaultMaxKeysPerScope = 100_000

// maxPrefixLength bounds [Options.Prefix].
const maxPrefixLength = 128

// Options configure a [Store]. The zero value works: every field has a default. Every
// Store sharing one prefix on one Redis must be configured alike (Prefix, TTL,
// MaxKeysPerScope): the scripts decide with the values the calling Store passes.
type Options struct {
	// Prefix begins the name of every Redis key the store writes; default
	// [DefaultPrefix]. At most 128 bytes, without '{' or '}' (the store puts the hash
	// tag after it). Stores with different prefixes on one server are independent.
	Prefix string

	// TTL is a key's time to live, counted from its first claim; default
	// [idempotency.DefaultKeyMaxAge] (24 hours). Redis deletes the key at its end
	// (PEXPIRE); takeovers, binds and extensions do not move it. It must be at least a
	// millisecond, Redis's resolution of expiry.
	TTL time.Duration

	// MaxKeysPerScope bounds the number of keys, pending or bound, one scope holds.
	// Zero means [DefaultMaxKeysPerScope]; a negative value removes the bound (the
	// keys are still counted, for [Store.Capacity]).
	MaxKeysPerScope int

	// Now, when set, is the clock of every time the store writes or compares, passed to
	// the scripts; every Store sharing the prefix must then use clocks that agree. When
	// nil, the scripts read the Redis server's clock (TIME), so that processes whose
	// own clocks disagree still agree on leases. Tests set it to move time. Redis's
	// own expiry runs on the server's clock either way: with Now set, a key is given
	// the rest of its time to live by Now's reckoning.
	Now func() time.Time
}

// Store is an [idempotency.KeyIndex], [idempotency.CapacityReporter] and
// [idempotency.Honouring] on Redis or Valkey. Create it with [New] (or [OpenURL]); it
// is safe for concurrent use, and any number of Stores, in one process or many, may
// share one server and prefix. Give New a client with ContextTimeoutEnabled set
// (OpenURL's has it), so that a ctx deadline bounds the wait for the server's answer,
// not only the wait for a connection.
//
// Beyond the KeyIndex contract, scopes, message ids, task ids and replies are within
// the bounds of [idempotency.CheckLengths]; longer input is refused with an error
// wrapping [idempotency.ErrInvalidArgument] before anything is sent. Every text is
// stored byte for byte.
type Store struct {
	rdb    redis.UniversalClient
	owned  bool // Close closes rdb
	prefix string
	ttl    int64 // µs
	limit  int64 // 0: no bound
	now    func() time.Time
}

var (
	_ idempotency.KeyIndex         = (*Store)(nil)
	_ idempotency.CapacityReporter = (*Store)(nil)
	_ idempotency.Honouring        = (*Store)(nil)
)

// New returns a Store on rdb, a *redis.Client, *redis.ClusterClient, a Sentinel
// failover client or any other [redis.UniversalClient], which must stay open while the
// Store is used (Close does not close it). It checks opts but does not touch the
// server.
func New(rdb redis.UniversalClient, opts Options) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: the client is nil")
	}
	prefix := opts.Prefix
	switch {
	case prefix == "":
		prefix = DefaultPrefix
	case len(prefix) > maxPrefixLength:
		return nil, fmt.Errorf("redisstore: the prefix is %d bytes, longer than %d", len(prefix), maxPrefixLength)
	case strings.ContainsAny(prefix, "{}"):
		return nil, errors.New("redisstore: the prefix contains '{' or '}'")
	}
	ttl := opts.TTL
	switch {
	case ttl == 0:
		ttl = idempotency.DefaultKeyMaxAge
	case ttl < time.Millisecond:
		return nil, fmt.Errorf("redisstore: TTL %v is below a millisecond", ttl)
	case ttl > maxDuration:
		return nil, fmt.Errorf("redisstore: TTL %v is above %v", ttl, maxDuration)
	}
	s := &Store{rdb: rdb, prefix: prefix, ttl: micros(ttl), now: opts.Now}
	switch {
	case opts.MaxKeysPerScope == 0:
		s.limit = DefaultMaxKeysPerScope
	case opts.MaxKeysPerScope > 0:
		s.limit = int64(opts.MaxKeysPerScope)
	}
	return s, nil
}

// OpenURL connects to the Redis or Valkey server that rawURL names and returns a Store
// on it, which owns the connection: [Store.Close] closes it. rawURL is a redis:// or
// rediss:// (TLS) URL as [redis.ParseURL] reads it,
// redis://[user:password@]host[:port][/db][?options], and may also carry the store's
// key prefix as the query parameter prefix (redis://cache:6379/0?prefix=app1:), which
// then replaces opts.Prefix: programs that take their store as one string (a flag, an
// environment variable) need nothing else. It pings the server, so that a wrong
// address or password fails here rather than at the first send. Errors never repeat
// the URL's password.
func OpenURL(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		return nil, fmt.Errorf("redisstore: the store URL is not a redis:// or rediss:// URL")
	}
	q := u.Query()
	if q.Has("prefix") {
		opts.Prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	o, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redisstore: store URL %s: %w", u.Redacted(), redact(err, rawURL))
	}
	// A request's deadline bounds the wait for the server's answer too, not only the
	// wait for a connection.
	o.ContextTimeoutEnabled = true
	s, err := New(redis.NewClient(o), opts)
	if err != nil {
		return nil, err
	}
	s.owned = true
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("redisstore: connect to %s: %w", u.Redacted(), err)
	}
	return s, nil
}

// Describe names the store rawURL opens for a log line or a banner, without its
// password: "Redis host:port/db", with the prefix when the URL sets one.
func Describe(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "Redis (a URL that does not parse)"
	}
	d := "Redis " + u.Host + u.Path
	if p := u.Query().Get("prefix"); p != "" {
		d += " (prefix " + p + ")"
	}
	return d
}

// redact replaces rawURL in err's text, should a parser have quoted it.
func redact(err error, rawURL string) error {
	if rawURL != "" && strings.Contains(err.Error(), rawURL) {
		return errors.New(strings.ReplaceAll(err.Error(), rawURL, "<url>"))
	}
	return err
}

// Close closes the connection of a Store made by [OpenURL]; for a Store made by [New]
// it does nothing.
func (s *Store) Close() error {
	if s.owned {
		return s.rdb.Close()
	}
	return nil
}

// Prefix returns the prefix of the names of the store's Redis keys.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the client the store sends its scripts through.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Claim implements [idempotency.KeyIndex.Claim] with one script. Lease is rounded up to
// a whole microsecond, and capped at 100 years.
func (s *Store) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	if err := checkArgs(scope, key, messageID, idempotency.Binding{}); err != nil {
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
	}
	switch {
	case messageID == "":
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w: empty message id", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	token := newToken()
	set := s.setName(scope)
	v, err := s.run(ctx, "claim", claimScript, []string{set + key, set},
		messageID, formatToken(token), micros(lease), s.ttl, key, s.limit)
	if err != nil {
		if redis.HasErrorPrefix(err, "OOM") {
			return idempotency.Claim{}, fmt.Errorf("redisstore: claim: the server is out of memory (maxmemory): %w", idempotency.ErrFull)
		}
		return idempotency.Claim{}, err
	}
	switch status, f, err := reply(v, 4); {
	case err != nil:
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
	case status == 1:
		return idempotency.Claim{Status: idempotency.Claimed, Token: token}, nil
	case status == 2:
		rec, err := record(messageID, f)
		if err != nil {
			return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
		}
		return idempotency.Claim{Status: idempotency.HeldBySameMessage, Record: rec}, nil
	case status == 3:
		return idempotency.Claim{Status: idempotency.HeldByOtherMessage}, nil
	default:
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: the scope holds %d keys: %w", s.limit, idempotency.ErrFull)
	}
}

// Bind implements [idempotency.KeyIndex.Bind] with one script. A Reply counts as set
// when it is not empty. A server out of memory (maxmemory) refuses the binding with
// an error wrapping [idempotency.ErrFull], and the key stays as it was.
func (s *Store) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if err := checkArgs(scope, key, "", b); err != nil {
		return fmt.Errorf("redisstore: bind: %w", err)
	}
	switch {
	case token == 0:
		return fmt.Errorf("redisstore: bind: %w: zero token", idempotency.ErrInvalidArgument)
	case b.TaskID == "" && len(b.Reply) == 0:
		return fmt.Errorf("redisstore: bind: %w: the binding has neither a task id nor a reply", idempotency.ErrInvalidArgument)
	}
	set := s.setName(scope)
	v, err := s.run(ctx, "bind", bindScript, []string{set + key}, formatToken(token), b.TaskID, b.Reply)
	if err != nil {
		if redis.HasErrorPrefix(err, "OOM") {
			return fmt.Errorf("redisstore: bind: the server is out of memory (maxmemory): %w", idempotency.ErrFull)
		}
		return err
	}
	return verdict("bind", v)
}

// Release implements [idempotency.KeyIndex.Release] with one script, which deletes the
// pending claim and its place in the scope's count.
func (s *Store) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("redisstore: release: %w", err)
	}
	if token == 0 {
		return fmt.Errorf("redisstore: release: %w: zero token", idempotency.ErrInvalidArgument)
	}
	set := s.setName(scope)
	v, err := s.run(ctx, "release", releaseScript, []string{set + key, set}, formatToken(token), key)
	if err != nil {
		return err
	}
	return verdict("release", v)
}

// Extend sets the lease of the pending claim of (scope, key) that token owns to end at
// exactly now plus lease, by the store's clock, with one script. When the key is
// absent, past its time to live, released, bound, held under another token, or its
// lease has ended (now at or past its end), it returns an error wrapping
// [idempotency.ErrNotOwner] and changes nothing. lease must be positive and token not
// zero ([idempotency.ErrInvalidArgument]); lease is rounded up to a whole microsecond,
// and capped at 100 years. Extend does not move the key's time to live.
func (s *Store) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return fmt.Errorf("redisstore: extend: %w", err)
	}
	switch {
	case token == 0:
		return fmt.Errorf("redisstore: extend: %w: zero token", idempotency.ErrInvalidArgument)
	case lease <= 0:
		return fmt.Errorf("redisstore: extend: %w: lease %v is not positive", idempotency.ErrInvalidArgument, lease)
	}
	set := s.setName(scope)
	v, err := s.run(ctx, "extend", extendScript, []string{set + key}, formatToken(token), micros(lease))
	if err != nil {
		return err
	}
	return verdict("extend", v)
}

// Lookup implements [idempotency.KeyIndex.Lookup] with one script that writes nothing.
func (s *Store) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	if err := checkArgs(scope, key, "", idempotency.Binding{}); err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: lookup: %w", err)
	}
	set := s.setName(scope)
	v, err := s.run(ctx, "lookup", lookupScript, []string{set + key})
	if err != nil {
		return idempotency.Record{}, false, err
	}
	status, f, err := reply(v, 5)
	if err == nil && status == 1 {
		var rec idempotency.Record
		if rec, err = record(f[0], f[1:]); err == nil {
			return rec, true, nil
		}
	}
	if err != nil {
		return idempotency.Record{}, false, fmt.Errorf("redisstore: lookup: %w", err)
	}
	return idempotency.Record{}, false, nil
}

// Capacity implements [idempotency.CapacityReporter] with one script that writes
// nothing: Held counts the keys of scope within their time to live, pending or bound.
// Limit is zero when the store has no per-scope bound.
func (s *Store) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	if err := idempotency.CheckLengths(scope, "", idempotency.Binding{}); err != nil {
		return idempotency.Capacity{}, fmt.Errorf("redisstore: capacity: %w", err)
	}
	v, err := s.run(ctx, "capacity", capacityScript, []string{s.setName(scope)})
	if err != nil {
		return idempotency.Capacity{}, err
	}
	n, ok := v.(int64)
	if !ok {
		return idempotency.Capacity{}, fmt.Errorf("redisstore: capacity: unexpected script result %v", v)
	}
	return idempotency.Capacity{Held: int(n), Limit: int(s.limit)}, nil
}

// ErrUnsafeServer is wrapped by the error of [Store.Check] for a server that may lose
// keys before their time to live ends, or cannot store them.
var ErrUnsafeServer = errors.New("redisstore: the server cannot keep idempotency keys safely")

// Check asks the server (INFO memory and replication, one round trip) whether it can
// keep the store's keys: it returns an error wrapping [ErrUnsafeServer] when the server
// evicts keys under memory pressure (maxmemory set with a maxmemory-policy other than
// noeviction: an evicted key lets a retry run the agent again) or is a replica (which
// refuses writes), an error wrapping the client's when the server does not answer, and
// nil otherwise. On Cluster it asks one node.
func (s *Store) Check(ctx context.Context) error {
	info, err := s.rdb.Info(ctx, "memory", "replication").Result()
	if err != nil {
		return fmt.Errorf("redisstore: check: %w", err)
	}
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch policy := fields["maxmemory_policy"]; {
	case fields["role"] == "slave" || fields["role"] == "replica":
		return fmt.Errorf("%w: it is a replica (connect to the primary)", ErrUnsafeServer)
	case fields["maxmemory"] != "0" && policy != "noeviction":
		return fmt.Errorf("%w: maxmemory-policy %s evicts keys when maxmemory is reached; set noeviction", ErrUnsafeServer, policy)
	}
	return nil
}

// HonoursKeys implements [idempotency.Honouring] with [Store.Check]: false when the
// server evicts keys or is a replica, so that the middleware refuses keyed sends rather
// than deduplicate them on keys the server may drop. A server that does not answer
// honours keys as far as this says: the calls themselves then fail, and the middleware
// answers 503.
func (s *Store) HonoursKeys(ctx context.Context) bool {
	return !errors.Is(s.Check(ctx), ErrUnsafeServer)
}

// verdict turns the answer of a script that binds, releases or extends into the
// operation's error: 1 done (or nothing to do), 0 not the owner, 2 bound to something
// else.
func verdict(op string, v any) error {
	switch n, _ := v.(int64); n {
	case 1:
		return nil
	case 0:
		return fmt.Errorf("redisstore: %s: %w", op, idempotency.ErrNotOwner)
	case 2:
		return fmt.Errorf("redisstore: %s: %w", op, idempotency.ErrAlreadyBound)
	}
	return fmt.Errorf("redisstore: %s: unexpected script result %v", op, v)
}

// run runs script on the keys with the current time (empty for the server's clock)
// and args, in one round trip (EVALSHA, or EVAL when the server lacks the script). A
// ctx already done sends nothing.
func (s *Store) run(ctx context.Context, op string, script *redis.Script, keys []string, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	now := ""
	if s.now != nil {
		now = strconv.FormatInt(s.now().UnixMicro(), 10)
	}
	v, err := script.Run(ctx, s.rdb, keys, append([]any{now}, args...)...).Result()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return nil, fmt.Errorf("redisstore: %s: %w (%w)", op, err, cerr)
		}
		return nil, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	return v, nil
}

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

// reply splits a script's array reply into its status and its n fields.
func reply(v any, n int) (int64, []string, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return 0, nil, fmt.Errorf("unexpected script result %v", v)
	}
	status, ok := a[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("unexpected script status %v", a[0])
	}
	if len(a) == 1 {
		return status, nil, nil
	}
	if len(a) != n+1 {
		return 0, nil, fmt.Errorf("script result of %d fields; want %d", len(a)-1, n)
	}
	f := make([]string, n)
	for i, x := range a[1:] {
		if f[i], ok = x.(string); !ok {
			return 0, nil, fmt.Errorf("unexpected script field %v", x)
		}
	}
	return status, f, nil
}

// record builds a Record from the fields t, r, c, l of a script's reply.
func record(messageID string, f []string) (idempotency.Record, error) {
	c, err1 := strconv.ParseInt(f[2], 10, 64)
	l, err2 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return idempotency.Record{}, fmt.Errorf("malformed record times: %w", err)
	}
	rec := idempotency.Record{
		MessageID:      messageID,
		TaskID:         f[0],
		ClaimedAt:      time.UnixMicro(c),
		LeaseExpiresAt: time.UnixMicro(l),
	}
	if f[1] != "" {
		rec.Reply = []byte(f[1])
	}
	return rec, nil
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

// newToken returns a fencing token of 63 random bits, never zero, as sqlstore does:
// random tokens are unique across every process sharing the server without
// coordination.
func newToken() idempotency.Token {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails; see crypto/rand.Read
		if t := binary.LittleEndian.Uint64(b[:]) >> 1; t != 0 {
			return idempotency.Token(t)
		}
	}
}

// formatToken returns t as the scripts store it: decimal text, compared as text (Lua
// numbers would lose its low bits).
func formatToken(t idempotency.Token) string { return strconv.FormatUint(uint64(t), 10) }
