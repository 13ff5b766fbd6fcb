// Package e2e holds the kit's end-to-end harnesses: tests and tools whose dependencies
// (a2a-go v0.3.x, gRPC, routers, load and crash drivers) a user of the library should not
// inherit. It is its own module, tied to the library by the repository's go.work, so
// `go test work` from the repository root runs it too.
package e2e
