module github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy

go 1.26

require (
	github.com/a2akit/idempotency v0.0.0-20261201201351-00129d898b87
	github.com/jmoiron/sqlx v1.4.0
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
)
