package redisstore

import (
	"context"
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
	// [idempotency.DefaultKeyMaxAge] (24 hours), rounded up to a whole millisecond,
	// Redis's resolution of expiry. Redis deletes the key at its end; takeovers, binds
	// and extensions do not move it. It must be at least a millisecond.
	TTL time.Duration

	// MaxKeysPerScope, when positive, bounds the number of keys, pending or bound, one
	// scope holds, counted exactly by the scripts in a sorted set per scope: a claim
	// of a new key in a full scope returns an error wrapping [idempotency.ErrFull],
	// and [Store.Capacity] reports the count. Zero or negative, the default, keeps no
	// count and bounds no scope (Redis's maxmemory bounds the store); a claim of an
	// absent key is then one SET command, and Capacity returns an error wrapping
	// [errors.ErrUnsupported]. See the package doc, "Bounds".
	MaxKeysPerScope int

	// Now, when set, is the clock of every time the store writes or compares, passed to
	// the scripts; every Store sharing the prefix must then use clocks that agree. When
	// nil, every time is the Redis server's (its expiry of keys, and TIME inside the
	// scripts), so that processes whose own clocks disagree still agree on leases.
	// Tests set it to move time. Redis's own expiry runs on the server's clock either
	// way: with Now set, a key is given the rest of its time to live by Now's
	// reckoning.
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
	ttl    int64 // ms
	limit  int64 // 0: no bound, no count
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
	s := &Store{rdb: rdb, prefix: prefix, ttl: int64((ttl + time.Millisecond - 1) / time.Millisecond), now: opts.Now}
	if opts.MaxKeysPerScope > 0 {
		s.limit = int64(opts.MaxKeysPerScope)
	}
	return s, nil
}

// OpenURL connects to the Redis or Valkey server that rawURL names and returns a Store
// on it, which owns the connection: [Store.Close] closes it. rawURL is a redis:// or
// rediss:// (TLS) URL as [redis.ParseURL] reads it,
// redis://[user:password@]host[:port][/db][?options], and may also carry the store's
// key prefix as the query parameter prefix (redis://cache:6379/0?prefix=app1:), which
// then replaces opts.Prefix, and the per-scope bound as max-keys-per-scope
// (?max-keys-per-scope=100000), which replaces opts.MaxKeysPerScope: programs that take
// their store as one string (a flag, an environment variable) need nothing else. It pings the server, so that a wrong
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
	}
	if q.Has("max-keys-per-scope") {
		n, err := strconv.Atoi(q.Get("max-keys-per-scope"))
		if err != nil {
			return nil, fmt.Errorf("redisstore: store URL %s: max-keys-per-scope is not a whole number", u.Redacted())
		}
		opts.MaxKeysPerScope = n
		q.Del("max-keys-per-scope")
	}
	u.RawQuery = q.Encode()
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
