module github.com/a2akit/idempotency/internal/e2e

go 1.26

replace github.com/a2akit/idempotency => ../..
