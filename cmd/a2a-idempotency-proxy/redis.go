package main

import (
	"context"

	"github.com/a2akit/idempotency/redisstore"
)

// openRedis opens a redis:// (or rediss://, TLS) key store: the keys live in Redis or
// Valkey (module github.com/a2akit/idempotency/redisstore), which deletes each at the
// end of its time to live, -key-max-age, so the proxy runs no sweep. The URL's query
// parameter prefix= sets the prefix of the store's Redis keys; proxies that share a
// server and a prefix share their keys.
func openRedis(ctx context.Context, c *config) (*keyStore, error) {
	s, err := redisstore.OpenURL(ctx, c.store, redisstore.Options{TTL: c.keyMaxAge})
	if err != nil {
		return nil, err
	}
	return &keyStore{index: s, name: redisstore.Describe(c.store), close: s.Close}, nil
}
