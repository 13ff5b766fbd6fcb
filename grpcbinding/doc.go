// Package grpcbinding makes keyed sends idempotent on A2A's gRPC binding, as package
// middleware does on JSON-RPC and HTTP+JSON.
package grpcbinding
