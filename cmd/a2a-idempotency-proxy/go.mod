module github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy

go 1.26

require (
	github.com/a2akit/idempotency v0.0.0-20261201204725-2dc1922fd06d
	github.com/jmoiron/sqlx v1.4.0
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
)
