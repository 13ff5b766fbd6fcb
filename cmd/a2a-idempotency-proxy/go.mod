module github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy

go 1.26

require (
	github.com/a2akit/idempotency v0.0.0-20261204184332-3f8fc5eaa29f
	github.com/a2akit/idempotency/redisstore v0.0.0-20261204184332-3f8fc5eaa29f
	github.com/jackc/pgx/v5 v5.12.0
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/prometheus/client_golang v1.24.1
	github.com/prometheus/common v0.70.1
)

require (
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/jmoiron/sqlx v1.4.0
	github.com/redis/go-redis/v9 v9.17.3 // indirect
)

require (
	github.com/a2aproject/a2a-go/v2 v2.4.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
