module github.com/a2akit/idempotency

go 1.26

require (
	github.com/DATA-DOG/go-sqlmock v1.5.2
	github.com/a2aproject/a2a-go/v2 v2.4.0
	github.com/jmoiron/sqlx v1.4.0
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
)

require (
	github.com/go-sql-driver/mysql v1.9.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/mod v0.38.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
