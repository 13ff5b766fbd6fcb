// Package redistest connects tests to the Redis server named by the environment
// variable IDEMPOTENCY_REDIS_URL, and gives each test a key prefix of its own.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// URLVar names the environment variable that holds the URL of the test server.
const URLVar = "IDEMPOTENCY_REDIS_URL"

// URL returns the URL of the test server. When the variable is not set, it skips t
// with a message that says how to set it; when it is set and the server does not
// answer PING, it fails t.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(URLVar)
	if u == "" {
		t.Skip(URLVar + " is not set; set it (e.g. redis://127.0.0.1:6379/0) to run the Redis tests")
	}
	rdb := Client(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("%s is set, but the server does not answer: %v", URLVar, err)
	}
	return u
}

// Client returns a client of the server at rawURL, closed when t ends, with
// ContextTimeoutEnabled set as redisstore asks.
func Client(t testing.TB, rawURL string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", URLVar, err)
	}
	o.ContextTimeoutEnabled = true
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Prefix returns a fresh key prefix ("test:<random>:"), and deletes every key under it
// on the server at rawURL when t ends, so that tests running at once, or one after the
// other, never meet.
func Prefix(t testing.TB, rawURL string) string {
	t.Helper()
	var b [8]byte
	rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	rdb := Client(t, rawURL)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var names []string
		for iter.Next(ctx) {
			names = append(names, iter.Val())
			if len(names) == 1000 {
				rdb.Del(ctx, names...)
				names = names[:0]
			}
		}
		if len(names) > 0 {
			rdb.Del(ctx, names...)
		}
	})
	return prefix
}
