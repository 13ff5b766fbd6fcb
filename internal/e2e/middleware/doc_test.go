// Package middleware_test runs the middleware's tests that need a2a-go v0.3.x
// (github.com/a2aproject/a2a-go), which the library's go.mod must not list: a2a-go
// v0.3.x's own server and client behind the middleware, the fixtures the v0.3 reader
// in middleware/ and the converters in middleware/internal/v03 are held to, the v0.3
// agent cards, and each v0.3 dialect (through a2a-go v2's a2acompat/a2av0, which
// imports a2a-go v0.3.x and gRPC) held to its v1.0 counterpart scenario by scenario.
// The middleware's other tests live beside it, in middleware/; both run on one
// harness, internal/testkit/mwtest, which this package gives v0.3's handlers and
// transports (harness_test.go).
package middleware_test
