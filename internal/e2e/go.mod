module github.com/a2akit/idempotency/internal/e2e

go 1.26

replace github.com/a2akit/idempotency => ../..

require (
	github.com/a2akit/idempotency v0.0.0-00010101000000-000000000000
	github.com/a2aproject/a2a-go v0.3.15
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
