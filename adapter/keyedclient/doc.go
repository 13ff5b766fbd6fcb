// Package keyedclient makes the sends of a2a-go's client (a2aclient, from
// github.com/a2aproject/a2a-go/v2, written against v2.4.0) keyed and retried.
//
// When the connection drops after a SendMessage left the client, the client cannot
// know whether the task exists, and a blind re-send may run the agent twice. A send
// that carries an idempotency key can be re-sent safely to a server that honours keys:
// the retry gets the first attempt's task, in its current state, or its Message.
//
// [FactoryOptions] returns a2aclient factory options that install a [Transport] for the
// JSON-RPC and HTTP+JSON bindings; WithKeyedTransport of the module
// github.com/a2akit/idempotency/grpcbinding installs one for the gRPC binding (its
// client interceptors report gRPC's ambiguous statuses as a [RetryableError]). For
// every SendMessage and SendStreamingMessage it:
//
//   - attaches a fresh key ([idempotency.NewKey]) to the message, unless the caller set
//     one, when the peer honours keys. The caller's message is not modified: the key
//     goes on a copy, so a message value reused for a later send never carries an old
//     key. A caller that wants to know the key sets it itself (adapter.SetMessageKey).
//   - retries a keyed send after an ambiguous failure, one after which the send may or
//     may not have reached the agent: the connection was refused, reset or dropped, the
//     response ended early, a timeout of the HTTP client, HTTP 502, 503 or 504, HTTP 429,
//     or HTTP 409 with Retry-After (the middleware's "first attempt still in flight").
//     Every retry resends the same message, with the same messageId and the same key,
//     after a backoff ([RetryPolicy]) that honours Retry-After. A Retry-After longer
//     than [RetryPolicy.MaxRetryAfter] (a full scope's 429 asks for an hour) ends the
//     retries at once: retrying much sooner than asked cannot help.
//
// A peer honours keys when its agent card declares [idempotency.ExtensionURI] (in
// capabilities.extensions), or when the caller asserts it ([Options.PeerHonoursKeys]),
// which a client created from endpoints without a card must do. Against any other peer
// the Transport changes nothing: it attaches no key (a server whose index cannot honour
// keys refuses keyed sends rather than run them without deduplication, and does not
// declare the extension), and it never retries, since a server that ignores the key
// would run the retry as a second task. An unkeyed send is never retried, and neither
// is a refusal (an A2A error such as a2a.ErrInvalidParams, or any other HTTP 4xx):
// retrying cannot change its outcome.
//
// Streaming sends are retried the same way, also after some events were received: the
// re-send with the same key re-attaches to the task, and its first event is the task's
// current state (a *a2a.Task), followed by the task's live events until it ends, as
// SubscribeToTask would deliver them. A caller therefore sees a *a2a.Task event in the
// middle of the stream after a retry, and must treat it as the task's full state. A
// stream that the server ends without error is never retried.
//
// A server that honours keys marks an answer served from a first attempt (a replay)
// with Idempotent-Replayed: true; [WatchReplay] tells the caller, per send, whether
// the answer it got was one. The kit's own "still in flight" is 409 (HTTP) or
// UNAVAILABLE (gRPC), and is retried; A2A v1.1's generation mismatch (-32010, 409
// without Retry-After, gRPC ABORTED with an ErrorInfo) is a refusal, never retried.
//
// The peer's card must declare the extension for retries to happen, so an operator who
// signs the card must declare it before signing (adapter.DeclareExtension): the kit's
// middleware serves a signed card unchanged.
package keyedclient
