package middleware

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware/internal/member"
	"github.com/a2akit/idempotency/middleware/internal/seam"
	"github.com/a2akit/idempotency/middleware/internal/v03"
)

// The dialects the middleware serves are a grid, framing × version:
//
//	            v1.0                      other versions (internal/v03: v0.3)
//	JSON-RPC    jsonrpc10 (jsonrpc.go)    foreignRPC, behind package seam (seam.go)
//	HTTP+JSON   rest10 (rest.go)          foreignREST
//
// route is the one place that decides which cell a request belongs to.
var (
	_ rpcDialect = jsonrpc10{}
	_ dialect    = rest10{}
)

// rpcDialect is a JSON-RPC dialect: it reads the params of its send calls.
type rpcDialect interface {
	dialect
	// readParams reads a send call's params into s, exactly as the server behind
	// decodes them, and reports whether they decode (the server refuses the call
	// before anything runs when they do not).
	readParams(s *send, params json.RawMessage) bool
}

// rpcSend is the dialect of a JSON-RPC send method, and whether it streams.
type rpcSend struct {
	d         rpcDialect
	streaming bool
}

// rpcSends are the JSON-RPC methods that send a message, in every version.
var rpcSends = map[string]rpcSend{
	methodSendMessage:          {jsonrpc10{}, false},
	methodSendStreamingMessage: {jsonrpc10{}, true},
}

// restOthers are the HTTP+JSON dialects of other versions, tried before v1.0's on a
// prefix that ends in theirs.
var restOthers []foreignREST

// The dialects of other versions register here, behind package seam.
func init() { register(v03.Dialects(seamEngine{})) }

// register adds a version's JSON-RPC dialect rpc and HTTP+JSON dialect rest to the
// grid.
func register(rpc seam.RPC, rest seam.REST) {
	d := foreignRPC{foreign{rpc, BindingJSONRPC}, rpc}
	send, stream := rpc.Methods()
	rpcSends[send] = rpcSend{d, false}
	rpcSends[stream] = rpcSend{d, true}
	restOthers = append(restOthers, foreignREST{foreign{rest, BindingHTTPJSON}, rest, rest.Prefix()})
}

// route reads the POST r, whose body is body, as the server behind will, and returns
// the send it is, or nil when it is none (another method, a body that does not
// decode):
//
//   - a path ending in /message:send or /message:stream is HTTP+JSON: another
//     version's when the prefix ends in its prefix and it reads the body as its send
//     (v0.3's: /v1, and a message with a "content" member), else v1.0's;
//   - any other path is JSON-RPC, and the method names the version.
//
// A JSON-RPC handler may be mounted on a catch-all path (a2a-go's CLI and TCK servers
// mount it at "/"), and then it runs a JSON-RPC call sent to an HTTP+JSON path too. So
// a body at an HTTP+JSON path is also read as JSON-RPC, and a send that either binding
// reads as keyed is treated as keyed: when only the JSON-RPC reading finds a message,
// the send is that JSON-RPC send; when both find one and either is keyed, the two
// readings are different sends, one of which would run undeduplicated depending on
// what is mounted, and the send is returned marked ambiguous, to be refused.
//
// Most bodies at an HTTP+JSON path have no "method" member at all, and then no
// JSON-RPC reading can find a send (it needs a method to name one): member.MayHave
// proves that without decoding, so such a body is decoded once, not twice.
func route(r *http.Request, body []byte) *send {
	header := r.Header.Values(idempotency.KeyHeader)
	prefix, streaming, isREST := restSend(r)
	if !isREST {
		s := readRPC(body)
		s.takeHeaderKey(header)
		return s
	}
	var rpc *send
	if member.MayHave(body, "method") {
		rpc = readRPC(body)
		rpc.takeHeaderKey(header)
	}
	rest := readREST(prefix, streaming, body)
	rest.takeHeaderKey(header)
	switch {
	case rpc == nil || !rpc.hasMessage:
		return rest
	case rest == nil || !rest.hasMessage:
		return rpc
	case rest.keyed || rpc.keyed:
		rest.keyed, rest.ambiguous = true, true
	}
	return rest
}

// readREST reads body as an HTTP+JSON send to the path prefix, in the version the
// path and body name, or returns nil.
func readREST(prefix string, streaming bool, body []byte) *send {
	for _, d := range restOthers {
		if strings.HasSuffix(prefix, d.prefix) {
			if s, ok := d.readSend(prefix, streaming, body); ok {
				return s
			}
		}
	}
	s, _ := rest10{}.readSend(prefix, streaming, body)
	return s
}

// readRPC reads body as a JSON-RPC send call, in the dialect its method names, or
// returns nil.
func readRPC(body []byte) *send {
	req, ok := readCall(body)
	if !ok {
		return nil
	}
	m, ok := rpcSends[req.Method]
	if !ok {
		return nil
	}
	s := &send{d: m.d, streaming: m.streaming, id: req.ID}
	if !m.d.readParams(s, req.Params) {
		return nil
	}
	return s
}

// framingOf returns the dialect that answers r when its body could not be read (too
// large, broken): the one route would pick from the path alone.
func framingOf(r *http.Request) dialect {
	prefix, _, isREST := restSend(r)
	if !isREST {
		return jsonrpc10{}
	}
	for _, d := range restOthers {
		if strings.HasSuffix(prefix, d.prefix) {
			return d
		}
	}
	return rest10{}
}
