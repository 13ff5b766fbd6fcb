// Package v03 is the middleware's support of A2A v0.3: its JSON-RPC binding (as
// a2a-go's a2acompat/a2av0.NewJSONRPCHandler and a2a-go v0.3.x serve it) and its
// HTTP+JSON binding (as a2acompat/a2av0.NewRESTHandler serves it), two dialects
// behind package seam. The codecs of their objects are kindjson (JSON-RPC) and pbjson
// (HTTP+JSON). Retiring v0.3 is deleting this directory and the line of the
// middleware's route.go that registers it.
//
// A v0.3 send is keyed, claimed, settled and replayed as a v1.0 send is; the package
// doc of the middleware holds for it, with these differences:
//
//   - What is recognised: on JSON-RPC, a call of message/send or message/stream, at
//     any path that is not an HTTP+JSON send; on HTTP+JSON, a POST whose path ends in
//     /v1/message:send or /v1/message:stream (v0.3's fixed prefix, under any mount)
//     and whose message has a "content" member, where v0.3 keeps a message's parts.
//     A v1.0 message keeps them in "parts" and has no content, so a v1.0 server
//     mounted under /v1, or a tenant named v1, keeps its v1.0 reading. a2a-go's v0.3
//     HTTP+JSON handler takes no bytes after the body, and the reading agrees.
//   - A2A v0.3 has no tenant: its sends share the empty tenant's scope with the v1.0
//     sends that name none, so a retry may come through either version.
//   - A retry gets the first attempt's Message converted from the v1.0 JSON the index
//     holds, as a2a-go's v0.3 handlers convert, or the task read with tasks/get (GET
//     …/v1/tasks/{id} on HTTP+JSON) and followed with tasks/resubscribe (GET
//     …/v1/tasks/{id}:subscribe). v0.3's HTTP+JSON cannot send a historyLength of 0:
//     it reads as absent. The answer has the retry's own version and shape, whichever
//     version the first attempt came in.
//   - Answers to keyed sends carry X-A2A-Extensions, v0.3's name for A2A-Extensions,
//     beside it.
//   - Early bind does not apply: v0.3 sends are forwarded as sent.
//   - JSON-RPC errors carry the codes of v1.0 (the same in v0.3) and no data, because
//     a2a-go's two v0.3 clients (its v1.0 SDK's a2av0 transport and a2a-go v0.3.x's
//     client) read data in shapes that exclude each other (a list, an object), and
//     both type an error by its code. HTTP+JSON errors are v1.0's google.rpc.Status
//     bodies. (a2a-go's v0.3 handler sends its own errors as
//     application/problem+json, which its v0.3 client does not type; the
//     middleware's are typed.)
//   - The agent card: a v0.3 card (with its top-level url) and a2av0's card that
//     joins both versions keep extensions where v1.0's does and get the entry the same
//     way; servers of v0.3 and before also serve it at /.well-known/agent.json.
package v03

import "github.com/a2akit/idempotency/middleware/internal/seam"

// Version is the A2A protocol version of the dialects.
const Version = "0.3"

// Dialects returns v0.3's JSON-RPC and HTTP+JSON dialects, on engine e.
func Dialects(e seam.Engine) (seam.RPC, seam.REST) {
	return jsonrpc{e}, rest{e}
}

// taskToV1 converts raw, the task a task read of v1.0's framing returned in a v0.3
// shape, with the codec's toV1, unless the read failed with f.
func taskToV1(e seam.Engine, raw []byte, f seam.Failure, toV1 func([]byte) ([]byte, error)) ([]byte, seam.Failure) {
	if f != nil {
		return nil, f
	}
	task, err := toV1(raw)
	if err != nil {
		return nil, e.Unframable(err)
	}
	return task, nil
}
