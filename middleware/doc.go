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
// Both bindings of A2A v1.0, at any mount point:
//
//   - HTTP+JSON: a POST whose path ends in /message:send or /message:stream (a
//     colon sent as %3A too), under any prefix and tenant segment.
//   - JSON-RPC, any other POST whose body is a JSON-RPC 2.0 call of SendMessage or
//     SendStreamingMessage.
//   - A keyed JSON-RPC call at an HTTP+JSON path is read as JSON-RPC: a JSON-RPC
//     handler on a catch-all mount (a2a-go's CLI and TCK servers mount it at "/") runs
//     it there. A body that the two bindings read as two sends, either keyed, is
//     refused (-32602, HTTP+JSON 400): which one runs depends on what is mounted.
//
// A send is keyed when its message's own metadata (params.message.metadata, or the
// body's message.metadata on HTTP+JSON) names [idempotency.MetadataKey], whether or
// not the message lists the extension, in every version, or when the request carries
// the key in the [idempotency.KeyHeader] header (the IETF draft's second carrier):
// honoured alone; with both, they must be equal ([idempotency.KeyOfSend]), or the
// send is refused as malformed; the body is forwarded as sent. Everything else passes
// through untouched: other methods and calls, unkeyed sends, bodies that are not
// JSON. The middleware reads the body of every POST whose body is a JSON object (a
// JSON-RPC send may come to any path; its first byte past white space is '{') up to
// Options.MaxBodyBytes, into a buffer that grows as the bytes arrive, answers 413
// beyond it, and hands the wrapped handler a body with the same bytes. Any other body
// (an upload, a form, a binary stream) reaches the wrapped handler as it arrives,
// unbuffered and unlimited, after the middleware looked at its first bytes.
// Options.Reads turns the middleware away from routes that take large or streamed
// JSON bodies that are not A2A.
//
// An unkeyed send costs a read and a search of its body: a body that contains
// neither the metadata name nor the JSON escapes \u and \/ that could spell it, sent
// without the Idempotency-Key header, is passed on without being parsed, and its
// answer without being wrapped.
//
// The middleware reads a send exactly as a2a-go's server of that version will:
// encoding/json into types with a2a-go's field tags, so keys match
// case-insensitively, the last of duplicate keys wins, and bytes after the JSON value
// are ignored where a2a-go ignores them. It never reads a different messageId or key
// than the server behind it.
//
// A2A v0.3's two bindings (message/send and message/stream over JSON-RPC, and
// …/v1/message:send and …/v1/message:stream over HTTP+JSON, as a2a-go's
// a2acompat/a2av0 handlers and a2a-go v0.3.x serve them) are recognised and handled
// by the same rules, with answers in v0.3's shapes and a key claimed in one version
// retried in the other; internal/v03 says how they are read and answered.
//
// # What it does with a keyed send
//
// The key is claimed in a scope, by default the tenant the server routes the send by
// ([TenantRoutes]: params.tenant, the REST path tenant of a2a-go's tenant templates,
// the body's tenant at an HTTP+JSON mount the agent card lists). Within the scope, the key is
// held by the message id, and, with Options.Principal, by the caller too (another
// caller's retry is answered as a key held by another message), and with
// Options.CheckContent by the message's content.
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
//     back until the key is bound, then passed on live). When the server itself
//     refused the send, the key is released, so an identical retry runs; when what
//     ran is unknown, it stays pending ("The rule of ambiguity"). The forward does
//     not stop when the client leaves: it goes on until the key is bound (see
//     "Servers the kit cannot see inside"), and its lease is extended meanwhile.
//     Values the client chose (scope, message and task ids) are logged cut to 64
//     bytes and a digest ([idempotency.LogValue]).
//   - A retry (same key, same messageId) runs nothing. It gets the first attempt's
//     Message again (the index holds it as v1.0 JSON), or the task as it is now: a
//     GetTask sent to the wrapped handler with the retry's own headers (so the server's authorization applies), or Options.Tasks. The
//     answer has the retry's own version and shape, whichever version the first
//     attempt came in. The task's history is shaped by the retry's
//     configuration.historyLength as GetTask shapes it: all of it when absent, none for
//     0, the last n for n. (a2a-go's own SendMessage answer ignores historyLength and
//     carries the whole history; an absent historyLength, what a2a-go's client sends,
//     gives exactly that.) A streaming retry gets the task as its first event and
//     then the task's live events, through a SubscribeToTask sent to the wrapped
//     handler; when the task has
//     finished it gets the task alone. A task deleted since gets TaskNotFound; the
//     agent does not run again. A task not found may also be one not stored yet
//     (a2a-go stores it at the agent's first event, and the adapter binds the key
//     before the agent starts): the retry waits up to Options.ReplayWait for it,
//     then answers 409 while something may still run the first attempt (its
//     execution runs in this process, which a subscription tells; or another process
//     may run it, until the claim is as old as Options.Lease, unless
//     Options.SoleInstance rules other processes out), and TaskNotFound once nothing
//     can.
//   - A retry while the first attempt has bound nothing yet waits up to
//     Options.ReplayWait, then answers 409 with Retry-After (the time left on the
//     first attempt's lease).
//   - A key reused by a different message is refused: JSON-RPC -32602, HTTP+JSON 400
//     INVALID_ARGUMENT, with a message containing "already held". Nothing about the
//     other message is revealed.
//   - A tenant (the scope), messageId or taskId past the bounds of
//     [idempotency.CheckLengths], or one the index refuses as invalid, is refused as
//     a client error before anything is claimed: JSON-RPC -32602, HTTP+JSON 400
//     INVALID_ARGUMENT. Retrying it cannot help, so it is never answered as a 503.
//   - When the index is full (the scope, or the whole index, holds as many keys as
//     it may), keyed sends are refused with 429 and a Retry-After of an hour (keys
//     leave only as their time to live ends): JSON-RPC code -32000, HTTP+JSON
//     RESOURCE_EXHAUSTED, both reason RESOURCE_EXHAUSTED. When the index fails (an
//     error, a timeout), keyed sends fail closed with 503 and Retry-After. Unkeyed
//     sends are unaffected by either.
//
// Every answer to a keyed send the middleware handled carries the response header
// A2A-Extensions: [idempotency.ExtensionURI] (and, in a version that names it
// otherwise, that name too), except the refusal for an index that cannot honour keys.
// Every answer served from a first attempt instead of running the send (a replay,
// an attach to the task's live events, the Message reply again, the news that the
// task is gone or that the reply cannot be replayed) also carries
// [idempotency.ReplayedHeader]: true; a first send's answer and a refusal never do.
//
// # Servers the kit cannot see inside
//
// The middleware keeps its promise, one run per key, in front of any handler that
// speaks A2A over HTTP: an a2a-go server without the adapter, a Go server the
// operator cannot change, or a server in another language behind an
// httputil.ReverseProxy (cmd/a2a-idempotency-proxy is that, ready made). There it
// only sees the wire, so it binds each key from the answers, and it makes sure it
// gets them (SPEC §6):
//
//   - The forward of a claimed first send is detached from the client. When the
//     client leaves, the request the wrapped handler serves is not cancelled, and what
//     it writes is discarded, until the answer binds the key: the task or Message of a
//     unary answer, the first event of a stream. Then the forward is cut (a stream is
//     not drained further; a server that stops a run when its client leaves stops it
//     then, as it would for the client). Options.ForwardTimeout after the client left,
//     an unbound forward is cut all the same, and the key stays pending until its
//     lease ends.
//   - While that forward runs unbound, the engine extends its lease (see "The
//     engine"), and retries in this process never take the claim over: they wait, and
//     answer 409 after ReplayWait. A retry in another process sees a running lease
//     and does the same.
//   - Early bind (Options.EarlyBind): a keyed blocking SendMessage (A2A v1.0, without
//     configuration.returnImmediately) is forwarded as a SendStreamingMessage when the
//     last agent card the middleware served (to a client, or to the proxy, which reads
//     its card every minute) says capabilities.streaming, and nothing behind the
//     middleware binds keys itself (once the a2a-go adapter has bound one, sends are
//     forwarded as sent). The key is bound at the stream's first event, so a retry
//     during a long run gets the task at once, as with the adapter. The streaming
//     form differs from the client's body only in the method name (JSON-RPC: the value
//     of the method member encoding/json reads, every other byte kept) or the path
//     (HTTP+JSON: message:stream), and asks for text/event-stream. The rest of the
//     stream is read and folded into the task as a2a-go's task manager folds events
//     (status, history, artifacts, metadata), and when it ends the client gets the
//     unary answer it asked for from the stream it read: that task (its history shaped
//     by the send's historyLength, all of it when absent), the agent's Message, or the
//     error the stream began with, with the middleware's headers rather than the
//     server's. The send is forwarded once: an answer to the streaming form that is no
//     stream is the send's answer, passed on as it came (a JSON task binds the key;
//     a cut or a hop's 502 leaves it pending). Only a definite "I do not stream" (405,
//     501, method not found, unsupported operation, UNIMPLEMENTED) certainly ran
//     nothing: the claim is released, the endpoint (a JSON-RPC path, an HTTP+JSON
//     prefix) gets sends as they were sent until the server serves a card again
//     (EarlyBindAlways: for a minute), and the send is claimed again and forwarded as
//     sent. No client's error turns early bind off. Streaming sends, non-blocking
//     sends and sends of other versions are forwarded as sent.
//   - Requests the middleware makes on behalf of a client (task reads, subscriptions,
//     probes) route as fresh client requests do, whatever state the router keeps in
//     the request context (chi's route context, gorilla/mux's variables): when the
//     request came through a net/http server, they are served by that server's own
//     handler, from the top, with a fresh context (only the local address value
//     net/http puts there; not the server, with which an httputil.ReverseProxy aborts
//     by a panic when its answer is cut) and the request-target the client would have
//     sent. A panic of the handler serving them is recovered, as is one in every
//     goroutine and timer of the engine: nothing the kit does on a client's behalf
//     can crash the process.
//     Outer middleware, an authentication middleware included, sees them as it sees a
//     client's request, with the retry's own headers. Values a server's BaseContext or
//     ConnContext adds are not in their context.
//
// What a client sees, by server:
//
//   - a2a-go with the adapter: the key is bound before the agent runs. A retry gets
//     the task at once, in whatever state it has reached.
//   - A server whose card says it streams (any language, behind the proxy or the
//     middleware alone): early bind. A retry gets the task within moments of the first
//     attempt's start (its first event); the first attempt's client gets its unary
//     answer when the run ends, as before.
//   - A server that does not stream, or EarlyBindOff: the key is bound when the first
//     attempt's answer comes. Until then a retry waits ReplayWait and gets 409 with
//     Retry-After (the time left on the lease), even when its client has left; it
//     never runs the agent again while the forward is alive, in this process or
//     another. After a crash of the process that forwarded, nothing extends the lease,
//     and a retry takes the key over when it ends (Options.Lease, 30 s by default): if
//     the server had started the agent, it runs again (no kit can see inside a server
//     that tells nothing before it answers).
//
// # The engine
//
// The lifecycle of a keyed send is one state machine, run by [Sends] for every
// binding: the HTTP middleware's exchange, grpcbinding's interceptors and the sidecar
// (which is the HTTP middleware) call Begin, Settle, Step.Done and ReadTask. Its
// states and transitions:
//
//	state       event                                        next        what the engine does
//	checked     key malformed, no messageId, bad scope        refused     answer invalid params
//	checked     index cannot honour keys                      refused     answer unsupported
//	checked     well-formed                                   claiming    Claim(scope, key, messageId, Lease)
//	claiming    Claimed (fresh, or a lease ended: takeover)   forwarding  keep the lease; count the forward live
//	claiming    held by another message                       refused     answer "already held"
//	claiming    held by the same message, bound               replaying   read the task, or the reply
//	claiming    held by the same message, pending             waiting     poll, woken by this process's binds
//	claiming    index failed / full / refused the values      refused     503 / 429 / invalid params
//	waiting     bound within ReplayWait                       replaying
//	waiting     released, or its lease ended (and no forward  claiming    at most 3 claims per send
//	            of this process is live)
//	waiting     ReplayWait over                               refused     409, Retry-After: the lease left
//	waiting     client gone                                   gone        answer nothing
//	forwarding  every third of the lease (±10 %)              forwarding  Extend(token, Lease)
//	forwarding  Extend refused (ErrNotOwner)                  forwarding  stop extending; log: a retry may win
//	forwarding  the answer showed what ran (Settle)           settled     the rule of ambiguity, below
//	settled     bound or released                             settled     stop extending
//	settled     binding failed (the index is unavailable)     rebinding   bind again in the background, the lease
//	                                                                      kept, the forward counted live (rebind)
//	rebinding   bound, fenced out, or ForwardTimeout over     done        stop extending; not live any more
//	settled     the forward returned (Step.Done)              done        stop extending; not live any more
//	replaying   reply is the unreplayable marker              refused     "cannot be replayed"
//	replaying   task found / reply                            done        answer it (stream: attach)
//	replaying   task not found, the first attempt may run     replaying   read again until ReplayWait; then 409
//	replaying   task not found, nothing can run it            refused     TaskNotFound
//
// The opaque-server heuristics (early bind, the detached forward, inner requests,
// probes: early.go, fold.go, detach.go, inner.go, probe.go) belong to the HTTP
// binding: they only choose how the forward runs and how a task is read, and never
// change a transition. Behind the a2a-go adapter, which binds before the agent runs,
// early bind turns itself off.
//
// # The rule of ambiguity
//
// A key is released only when it is certain that nothing ran, and a claimed send is
// forwarded at most once. What a forward's answer showed ([Produced]) decides:
//
//	the answer showed                                    the key
//	a task (Task, status or artifact update)             bound to the task
//	a Message reply the index can store                  bound to the reply
//	more than a bound (an answer past 32 MiB, a first    bound to a marker: retries are told "cannot be
//	  event past 10 MiB, a reply past MaxReplyLength,      replayed" (JSON-RPC -32603, HTTP+JSON 500
//	  a value the index refuses or has no room for)        DATA_LOSS, gRPC DATA_LOSS); nothing runs again
//	a definite refusal by the server itself              released
//	anything else                                        pending: retries wait, get 409 with the lease
//	                                                       left, and take over only when the lease ends
//
// A definite refusal is, on JSON-RPC, an HTTP 200 answer with a JSON-RPC error
// object, of any code but -32000 (the generic server error, which a kit behind this
// one answers for "in flight" and "unavailable"); a2a-go answers -32603 when the agent
// failed before its task existed. On HTTP+JSON, a google.rpc.Status body with a 4xx
// status but 408 and 409, or 500. On both, HTTP 404, 405 and 501 whatever the body
// (nothing serves the route). On gRPC, a status of the service's own but CANCELED,
// DEADLINE_EXCEEDED, UNAVAILABLE, ABORTED, UNKNOWN and DATA_LOSS. Everything else is
// unknown: a transport error after the request was written, a 502, 503 or 504 of a
// hop, a timeout, a body that is not the binding's, a client gone before the answer
// was read, and any answer to a forward the kit cut (ForwardTimeout). A definite
// refusal releases the key also when the client left before it came. A claim the
// code behind could not bind (the adapter refused to run the agent) never left the
// process: it is released, and the client gets 503.
//
// # Errors on the wire
//
// JSON-RPC errors are HTTP 200 with a JSON-RPC error whose id is the request's own,
// and which is one Server-Sent Event when the request was a streaming send (a2a-go's
// clients drop a plain body there). Its data holds a google.rpc.ErrorInfo in domain
// a2a-protocol.org. The codes: -32602 invalid params, -32004 unsupported
// operation, -32001 task not found, -32603 internal error. Errors with an HTTP status
// of their own are plain JSON bodies: 503 (code -32000, reason SERVER_ERROR), 429
// (code -32000, reason RESOURCE_EXHAUSTED), 409 (code -32000, reason SERVER_ERROR),
// 413 (code -32600, reason INVALID_REQUEST, id null). HTTP+JSON errors are
// google.rpc.Status bodies sent as application/json with their HTTP
// status, on message:stream too: 503 UNAVAILABLE, 409 UNAVAILABLE (both reason
// SERVER_ERROR; never ABORTED, A2A v1.1's status of a generation mismatch), 429
// RESOURCE_EXHAUSTED, 413 INVALID_ARGUMENT (reason INVALID_REQUEST). Every error the
// middleware makes also carries, after A2A's, an ErrorInfo of the kit's own: domain
// [ReasonDomain], a reason such as [ReasonInFlight] or [ReasonKeyReused] (see
// reason.go), so that a client tells the kit's 409 from A2A v1.1's
// TaskGenerationMismatchError (-32010, also 409), which the kit never answers. The
// 503, 429 and 409 bodies repeat the Retry-After delay in the
// ErrorInfo metadata as retryAfterSeconds. An error the server behind answered (to a task
// read, say) is passed on with its own status, code and message; on HTTP+JSON its
// body is sent as application/json.
//
// # Agent card
//
// A GET or HEAD of /.well-known/agent-card.json (or of /.well-known/agent.json, the
// older path servers still serve) is answered by the wrapped
// handler; when the index can honour keys and the answer is a 200 JSON card, the
// middleware inserts {"uri": [idempotency.ExtensionURI], "description": …,
// "required": false} at the end of capabilities.extensions (creating the member, or
// capabilities, where missing) and copies every other byte of the card as the
// handler wrote it: member order, formatting and unknown members stay, and the
// entry is indented like its neighbours in a pretty-printed card. Members are found
// as encoding/json finds them (names case-insensitive, the last duplicate wins), so
// a Go client reads the entry. Cards of older versions keep extensions there too, and
// get it the same way. A card that already lists the URI is served as it is. A signed card
// (non-empty "signatures") that does not list it is served unchanged, since
// inserting would break the signature, and the middleware logs a warning once:
// declare the extension before signing.
//
// The wrapped handler is asked for the card without the request's If-None-Match
// and If-Modified-Since, and the middleware answers them: a card it changed gets a
// strong ETag of the served bytes in place of the handler's (where the handler sent
// one; none is added otherwise) and answers 304 only to that ETag, never to the
// handler's validators; a card it left alone keeps the handler's validators, which
// it compares as the handler would. Content-Length is the served card's;
// Cache-Control and the other headers pass through. A HEAD is answered as the GET
// would be, without the body.
//
// # Logs and metrics
//
// The middleware logs through Options.Logger. Every line about a keyed send carries
// the same request_id (the request's X-Request-Id, or one made up) and the key
// redacted by [idempotency.RedactKey] (never the full key, at any level), and, once
// decided, its outcome; a last debug line "idempotency: keyed send done" names the
// outcome and the time spent. Options.Observe receives one [Event] per keyed send:
// its [Outcome], named by what the client got, its binding and protocol version,
// what bound the key, and the time the middleware spent in the index, waiting for
// a first attempt and reading a retry's task. Package metrics
// ([github.com/a2akit/idempotency/middleware/metrics]) serves Events to Prometheus.
//
// # Reading the code
//
// A request goes ServeHTTP (middleware.go) → route (route.go) → exchange.run
// (exchange.go) → the engine: Sends.Begin (engine.go; core.begin and decide in
// core.go) → forward (forward.go, or forwardEarly in early.go) and settle (settle.go),
// or replay (replay.go, waiting in wait.go). One word per concept:
//
//   - send: a SendMessage or SendStreamingMessage as the server behind reads it;
//     keyed when its message names the key. [Send] is the engine's record of one.
//   - dialect: one cell of the grid framing × version: JSON-RPC or HTTP+JSON (the A2A
//     protocol bindings, [ProtocolBinding]) in one A2A version ([ProtocolVersion]).
//     route picks it; nothing else asks. Other versions' dialects are written against
//     package internal/seam and registered in route.go.
//   - engine: [Sends], the lifecycle above, for every binding; core is its state. It
//     takes a context and a claim key, never an *http.Request.
//   - step: what Begin decided ([Step]): a refusal, a forward, a replay, or gone.
//   - claim: the index's hold on a key for one message ([ClaimedSend]); bind ties it
//     to a task or a Message reply (an [idempotency.Binding]), release frees it, the
//     lease keeper extends it.
//   - produced: what a forward's answer showed ([Produced]); settle applies the rule
//     of ambiguity to it. Each dialect reads answers and events into one.
//   - exchange: one keyed send on its way through the HTTP middleware.
//   - forward: pass a claimed send to the wrapped handler, once; its answer is
//     written by one writer per mode (unary, stream, held back, early), chosen once.
//   - product: what a retry is answered with, a task or a Message, as v1.0 JSON.
//   - replay: answer a retry from what its first attempt produced; probe: ask the
//     wrapped handler whether an execution still runs.
//   - [Outcome]: what the engine did with a keyed send, reported in an [Event].
//
// The files:
//
//	middleware.go      New, ServeHTTP, the request body
//	options.go         Options, TaskSource, Outcome, Event
//	route.go           the dialect grid and route, the one routing function
//	dialect.go         the dialect interface; send, carry, product, failure
//	engine.go          Sends, Send, Step, Produced: the engine's API for every binding
//	core.go            begin, claim, wait, decide, release (no *http.Request)
//	settle.go          the rule of ambiguity, settle, the unreplayable marker
//	lease.go           the lease keeper (Extend), live forwards, recovery
//	wait.go            a retry's wait for a task not stored yet
//	log.go             outcomes, Events, log lines
//	exchange.go        one keyed send over HTTP: the engine's steps, answered
//	claim.go           ClaimedSend, the claim code behind the middleware binds with
//	forward.go         the forwarded answer's writers, and the settler
//	detach.go          a forward that outlives its client
//	early.go, fold.go  early bind: a unary send forwarded as a stream, folded back
//	inner.go           the middleware's own requests, routed as fresh ones
//	replay.go          replays: task reads, the subscription's writer
//	probe.go           whether an execution still runs
//	notify.go          waking the retries of this process
//	card.go            the agent card
//	jsonrpc.go         JSON-RPC framing, and its v1.0 dialect
//	rest.go            HTTP+JSON framing, and its v1.0 dialect
//	wire.go, sse.go    what the dialects share: errors, responses, events
//	reader.go          the request fields a send is read into
//	seam.go            other versions' dialects, adapted to the engine
//	internal/seam      the interface another version's dialect implements
//	internal/v03       the one such today, with its codecs kindjson and pbjson
//	internal/v1json    A2A v1.0 objects, for the codecs
package middleware
