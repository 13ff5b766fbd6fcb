// Package middleware makes A2A SendMessage and SendStreamingMessage idempotent in
// front of an existing Go A2A server, such as one built with the official SDK
// (github.com/a2aproject/a2a-go/v2), without changing it.
//
// [New] returns an ordinary func(http.Handler) http.Handler. Wrap the server's whole
// mux, or at least its A2A routes and its agent card:
//
//	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
//	if err != nil { … }
//	http.ListenAndServe(addr, mw(mux))
//
// # What it recognises
//
// Both A2A v1.0 bindings, at any mount point: on HTTP+JSON, a POST whose path ends in
// /message:send or /message:stream (a colon sent as %3A too), under any prefix and
// tenant segment; on JSON-RPC, any other POST whose body is a JSON-RPC 2.0 call of
// SendMessage or SendStreamingMessage. A send is keyed when its message's own
// metadata (params.message.metadata) names [idempotency.MetadataKey], whether or not
// the message lists the extension. Everything else passes through untouched: other
// methods and calls, unkeyed sends, bodies that are not JSON. The middleware reads
// the body of every POST (a JSON-RPC send may come to any path) up to
// Options.MaxBodyBytes, answers 413 beyond it, and hands the wrapped handler a body
// with the same bytes. So mount it on the A2A routes only, or raise the limit, when
// the mux also takes large uploads.
//
// An unkeyed send costs a read and a search of its body: a body that contains
// neither the metadata name nor the JSON escapes \u and \/ that could spell it is
// passed on without being parsed, and its answer without being wrapped.
//
// The middleware reads a send exactly as a2a-go's server will: encoding/json into
// types with a2a-go's field tags, so keys match case-insensitively, the last of
// duplicate keys wins and bytes after the JSON value are ignored. It never reads a
// different messageId or key than the server behind it.
//
// # What it does with a keyed send
//
// The key is claimed in a scope, by default the request's A2A tenant (params.tenant,
// or the body's tenant on HTTP+JSON). a2a-go's HTTP+JSON client sends the tenant in
// the body as well as in the path; when clients put it only in the path, or when the
// authenticated principal should be part of the scope, set Options.Scope.
//
//   - A malformed key, or one that is not a JSON string, is refused before anything
//     runs: JSON-RPC -32602, HTTP+JSON 400 INVALID_ARGUMENT, with the key's error.
//   - When the index cannot honour keys (nil, or [idempotency.Honouring] says so),
//     keyed sends are refused: JSON-RPC -32004, HTTP+JSON 400 UNIMPLEMENTED (reason
//     UNSUPPORTED_OPERATION). Unkeyed sends are unaffected.
//   - A first send is claimed and forwarded. The request's context carries a
//     [ClaimedSend], so that code behind the middleware can bind the key to the task
//     before the agent runs. Otherwise the middleware binds it from the answer: the
//     task or Message of a non-streamed answer, or the first event of a stream (held
//     back until the key is bound, then passed on live). When the send fails before
//     a task or Message exists, the key is released, so an identical retry runs. When
//     the client went away and nothing behind the middleware bound the key, the agent
//     may still be running (a2a-go runs it detached from the request), so the key
//     stays pending until its lease ends.
//   - A retry (same key, same messageId) runs nothing. It gets the first attempt's
//     Message again, or the task as it is now: a GetTask sent to the wrapped handler
//     with the retry's own headers (so the server's authorization applies), or
//     Options.Tasks. The task's history is shaped by the retry's
//     configuration.historyLength as GetTask shapes it: all of it when absent, none for
//     0, the last n for n. (a2a-go's own SendMessage answer ignores historyLength and
//     carries the whole history; an absent historyLength, what a2a-go's client sends,
//     gives exactly that.) A streaming retry gets the task as its first event and then
//     the task's live events, through a SubscribeToTask sent to the wrapped handler;
//     when the task has finished it gets the task alone. A task deleted since gets
//     TaskNotFound; the agent does not run again.
//   - A retry while the first attempt has bound nothing yet waits up to
//     Options.ReplayWait, then answers 409 with Retry-After (the time left on the
//     first attempt's lease).
//   - A key reused by a different message is refused: JSON-RPC -32602, HTTP+JSON 400
//     INVALID_ARGUMENT, with a message containing "already held". Nothing about the
//     other message is revealed.
//   - When the index fails (an error, a timeout, a full scope), keyed sends fail
//     closed with 503 and Retry-After; unkeyed sends are unaffected.
//
// Every answer to a keyed send the middleware handled carries the response header
// A2A-Extensions: [idempotency.ExtensionURI], except the refusal for an index that
// cannot honour keys.
//
// # Errors on the wire
//
// JSON-RPC errors are HTTP 200 with a JSON-RPC error whose id is the request's own,
// whose data holds a google.rpc.ErrorInfo in domain a2a-protocol.org, and which is one
// Server-Sent Event when the request was SendStreamingMessage (a2a-go's client drops
// a plain body there). Errors with an HTTP status of their own are plain JSON bodies:
// 503 (code -32000, reason SERVER_ERROR), 409 (code -32000, reason SERVER_ERROR), 413
// (code -32600, reason INVALID_REQUEST, id null). HTTP+JSON errors are google.rpc.Status
// bodies sent as application/json with their HTTP status, on message:stream too: 503
// UNAVAILABLE, 409 ABORTED (both reason SERVER_ERROR), 413 INVALID_ARGUMENT (reason
// INVALID_REQUEST). The 503 and 409 bodies repeat the Retry-After delay in the
// ErrorInfo metadata as retryAfterSeconds.
//
// # Agent card
//
// A GET of /.well-known/agent-card.json is answered by the wrapped handler; when the
// index can honour keys and the answer is a 200 JSON card, the middleware adds
// {"uri": [idempotency.ExtensionURI], "description": …, "required": false} to
// capabilities.extensions and keeps every other field. A card that already lists the
// URI is served as it is. A signed card (non-empty "signatures") that does not list
// it is served unchanged, since appending would break the signature, and the
// middleware logs a warning once: declare the extension before signing.
//
// # Logs and metrics
//
// The middleware logs through Options.Logger. Keys appear in full only in debug
// records; other records carry [idempotency.RedactKey]. Options.Observe receives one
// [Event] per keyed send.
package middleware
