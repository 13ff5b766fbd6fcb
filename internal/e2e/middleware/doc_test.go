// Package middleware_test runs the middleware's tests that need a2a-go v0.3.x
// (github.com/a2aproject/a2a-go), which the library's go.mod must not list: a
// server and client of that version behind the middleware, and the fixtures the
// middleware's v0.3 reader and converter are held to. The middleware's other tests
// live beside it, in middleware/.
package middleware_test
