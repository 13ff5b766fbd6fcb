// Package anyserver tests the kit in front of an A2A server it cannot see inside: a
// plain a2a-go server (internal/e2e/upstream, no adapter) in another process, reached
// over TCP on loopback, behind the sidecar cmd/a2a-idempotency-proxy in a third
// process, and behind the middleware wrapping an httputil.ReverseProxy in the test's
// own process. The same checks run against both (SPEC §6).
package anyserver
