// Package v03 is the middleware's support of A2A v0.3: its JSON-RPC binding (as
// a2a-go's a2acompat/a2av0 and a2a-go v0.3.x serve it) and its HTTP+JSON binding (as
// a2acompat/a2av0 serves it), as two dialects behind package seam. The codecs of
// their objects are kindjson (JSON-RPC) and pbjson (HTTP+JSON).
//
// A send in either dialect is keyed, claimed and settled as a v1.0 send is: the
// dialects only read its params and convert tasks and messages between v0.3's wire
// and the v1.0 JSON the engine and the index hold, as a2a-go's v0.3 handlers
// convert, so a key claimed in one version may be retried in the other. Retiring
// v0.3 is deleting this directory and the line of the middleware that registers it.
package v03

import "github.com/a2akit/idempotency/middleware/internal/seam"

// Version is the A2A protocol version of the dialects.
const Version = "0.3"

// Dialects returns v0.3's JSON-RPC and HTTP+JSON dialects, on engine e.
func Dialects(e seam.Engine) (seam.RPC, seam.REST) {
	return jsonrpc{e}, rest{e}
}
