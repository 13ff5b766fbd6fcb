package main

import (
	"context"
	"errors"
)

// openRedis opens a redis:// (or rediss://) key store. It is the seam the Redis
// index (module github.com/a2akit/idempotency/redisstore) is wired into; until then
// the proxy says so instead of opening anything.
func openRedis(_ context.Context, c *config) (*keyStore, error) {
	return nil, errors.New("-store redis://: this build of the proxy has no Redis key store yet; use a SQLite file or a postgres:// DSN")
}
