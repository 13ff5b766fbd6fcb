module github.com/a2akit/idempotency/examples

go 1.26

require (
	github.com/a2akit/idempotency v0.0.0
	github.com/a2aproject/a2a-go/v2 v2.4.0
	github.com/go-chi/chi/v5 v5.5.0
	github.com/jmoiron/sqlx v1.4.0
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/mod v0.38.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)

replace github.com/a2akit/idempotency => ../
