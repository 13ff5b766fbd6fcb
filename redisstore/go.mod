module github.com/a2akit/idempotency/redisstore

go 1.26

require (
	github.com/a2akit/idempotency v0.0.0-20261204184332-3f8fc5eaa29f
	github.com/redis/go-redis/v9 v9.17.3
)

require (
	github.com/a2aproject/a2a-go/v2 v2.4.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
