package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/redisstore"
)

// A Store on a client the program already has: one node here; a ClusterClient or a
// Sentinel failover client works the same. (Examples that need a server do not run as
// tests: see the package's tests against IDEMPOTENCY_REDIS_URL.)
func ExampleNew() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true})
	defer rdb.Close()
	store, err := redisstore.New(rdb, redisstore.Options{Prefix: "app1:"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	c, err := store.Claim(ctx, "tenant-a", "5f2b8c1e9a7d4e3f8b6a1c0d2e4f6a8b", "message-1", time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	if c.Status == idempotency.Claimed {
		err = store.Bind(ctx, "tenant-a", "5f2b8c1e9a7d4e3f8b6a1c0d2e4f6a8b", c.Token, idempotency.Binding{TaskID: "task-1"})
	}
	fmt.Println(c.Status, err)
}

// A program that takes its store as one URL: the key prefix may come with it.
func ExampleOpenURL() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := redisstore.OpenURL(ctx, "rediss://:secret@cache.internal:6380/0?prefix=app1:", redisstore.Options{})
	if err != nil {
		log.Fatal(err) // the error never repeats the password
	}
	defer store.Close()
	idem, err := middleware.New(store, middleware.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = idem // wrap the A2A server's handler with it
}
