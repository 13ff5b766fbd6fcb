package middleware

import "net/http"

// WriteTooLarge answers r with 413 exactly as the middleware answers a body over
// [Options.MaxBodyBytes], in the binding r's path names (HTTP+JSON's google.rpc.Status
// for a path ending in /message:send or /message:stream, v0.3's under /v1; a
// JSON-RPC error with id null for any other path). The middleware bounds only the
// bodies it reads (JSON objects); a handler in front of it that bounds every body,
// as the sidecar cmd/a2a-idempotency-proxy does before it forwards one, answers with
// WriteTooLarge so that clients see one shape for one limit.
func WriteTooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	writeFailure(w, framingOf(r), nil, tooLarge(limit), false)
}
