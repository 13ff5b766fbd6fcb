package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// PostgresDSNVar names the environment variable that points tests at a PostgreSQL
// database, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const PostgresDSNVar = "IDEMPOTENCY_POSTGRES_DSN"

// RandomName returns a name no other run uses: prefix and 12 hex digits.
func RandomName(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// PostgresDSN returns the DSN in PostgresDSNVar, skipping tb when it is unset.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(PostgresDSNVar)
	if dsn == "" {
		tb.Skipf("PostgreSQL is not configured: set %s, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable", PostgresDSNVar)
	}
	return dsn
}
