// Package middleware_test runs the middleware's end-to-end tests: the real a2a-go
// servers and clients of A2A v1.0 and v0.3 (a2acompat/a2av0 and a2a-go v0.3.x), with
// the middleware in front, in every dialect. They live in the harness module so that
// the library's go.mod does not list a2a-go v0.3.x, a2acompat or gRPC.
package middleware_test
