package middleware

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"
)

// Defaults of [Options].
const (
	// DefaultLease is how long a claim whose owner stopped extending it (it died)
	// holds before an identical retry may take it over. The owner extends the lease
	// every third of it while its send runs, so the lease only bounds how long a dead
	// owner's key stays unusable (see "The engine" in the package documentation).
	// 30 s leaves two extensions room to fail or come late (each bounded by
	// IndexTimeout, 5 s) before a live claim could lapse, at an extension every 10 s
	// per running send.
	DefaultLease = 30 * time.Second
	// DefaultReplayWait is how long a retry waits for an in-flight first attempt to make
	// its task known before answering 409.
	DefaultReplayWait = 2 * time.Second
	// DefaultMaxBodyBytes bounds the body of a request the middleware reads.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultIndexTimeout bounds each call to the index.
	DefaultIndexTimeout = 5 * time.Second
	// DefaultForwardTimeout bounds a claimed first send's forward once its client
	// has left and until its key is bound.
	DefaultForwardTimeout = 10 * time.Minute
)

// Options configure the middleware. The zero value works: every field has a default.
type Options struct {
	// Scope returns the scope a keyed send's key lives in. tenant is the A2A tenant
	// the request names (params.tenant, or the body's tenant on the HTTP+JSON
	// binding; always empty in A2A v0.3, which has no tenant). The default is
	// [TenantRoutes] with [DefaultTenantTemplates], which learns the HTTP+JSON mounts
	// from the agent card (as the middleware serves it, or read once through the
	// wrapped handler); routes of other templates are NewTenantRoutes(...).Scope, and
	// then learn mounts only from [TenantRoutes.LearnCard]. Bind keys to callers with
	// Principal, not here. An error refuses the send as invalid params (JSON-RPC
	// -32602, REST 400) with the error's text.
	Scope func(r *http.Request, tenant string) (string, error)

	// Tenants are the routes of the default scope, used when Scope is nil; nil means
	// NewTenantRoutes() (the default templates). With them the middleware reads
	// another protocol version's path prefix (A2A v0.3's /v1) as no tenant. It
	// teaches the agent card's HTTP+JSON mounts only to routes it made itself: teach
	// routes passed here with [TenantRoutes.LearnCard] (the sidecar does, from the
	// upstream's card).
	Tenants *TenantRoutes

	// Principal, when set, binds keys to their caller: it returns the principal
	// (the authenticated user) who made r, and a retry of a keyed send by another
	// principal is answered exactly as a key held by another message ("already
	// held"): nothing of the first attempt, task, stream or Message reply, reaches
	// it, whatever it knows of the key and message id. [PrincipalHeader] reads a
	// header set by an authenticating proxy; adapter.Principal runs an a2a-go
	// server's own authentication. An error, or an empty principal, refuses a keyed
	// send as invalid params (JSON-RPC -32602, REST 400) with the error's text (or a
	// message asking to authenticate): return a fixed name for anonymous callers
	// that may share keys. nil (the default) binds keys to the scope alone, as the
	// Rust SDK's extension does: then anyone who can send in the scope and learns a
	// key and its message id gets that send's task or reply replayed. Bind every
	// binding (grpcbinding's Principal) alike: a send claimed with a principal is
	// another message to one claimed without.
	Principal func(r *http.Request) (string, error)

	// CheckContent, when true, refuses a retry whose message differs from its first
	// attempt's (parts, role, contextId, taskId, referenceTaskIds; see
	// [MessageFingerprint]) as a key held by another message, instead of replaying
	// the first attempt to it. The fingerprint is a fixed-size digest kept in the
	// claim. It costs a second decode of the message of each keyed send. Off by
	// default, as in the Rust SDK's extension, which trusts the message id alone;
	// turn it on for every binding on the index alike.
	CheckContent bool

	// Lease is how long a claim stays in flight, from its claim or its latest
	// extension, before an identical retry may take it over; default [DefaultLease].
	// The engine extends it every third of it while the first attempt runs, so it
	// bounds how long the key of a dead owner is unusable. It also bounds how long a key bound to a task that
	// is not stored yet counts as "task coming" rather than "task gone" when its
	// execution does not run in the retry's own process (there a subscription tells),
	// since it may run in another one, unless SoleInstance is set: keep it above the
	// agent's time to its first event.
	Lease time.Duration

	// SoleInstance declares that this process is the only one that runs keyed sends
	// on the index: no replica shares it, and a restart never overlaps the process it
	// replaces. A key bound to a task that is not found then counts as gone as soon
	// as no execution of the task runs in this process (a subscription through the
	// wrapped handler tells), instead of as "task coming" until the claim is as old
	// as Lease: after a restart, a retry of a send whose first attempt died before
	// the agent's first event gets TaskNotFound at once, not 409. Leave it false
	// when replicas share the index, during rolling deploys that run an old and a
	// new process at once, and in a2a-go's cluster mode (the execution runs on
	// another worker).
	SoleInstance bool

	// ForwardTimeout bounds the forward of a claimed first send once its client has
	// left. The forward does not stop when the client leaves: it goes on, detached
	// from the client (what it writes is discarded), until the answer binds the key
	// (the task or Message of a unary answer, the first event of a stream), and is
	// then cut; ForwardTimeout after the client left it is cut all the same, and the
	// key stays pending until its lease ends. Default [DefaultForwardTimeout]. While such a forward
	// runs unbound, the middleware renews its lease and this process's retries never
	// take it over (see the package documentation, "Servers the kit cannot see
	// inside"). It also bounds how long the engine binds a key again in the
	// background after binding it to what its send produced failed (the index was
	// unavailable), the lease renewed meanwhile.
	ForwardTimeout time.Duration

	// EarlyBind says whether a keyed blocking SendMessage is forwarded as a
	// streaming send, so that its key is bound at the first event rather than when
	// the run ends; default [EarlyBindAuto].
	EarlyBind EarlyBind

	// ReplayWait is how long a retry waits for an in-flight first attempt's task;
	// default [DefaultReplayWait]. Negative means do not wait.
	ReplayWait time.Duration

	// MaxBodyBytes bounds the request bodies the middleware reads; larger ones get 413.
	// Default [DefaultMaxBodyBytes]. The middleware reads a body into a buffer that
	// grows as its bytes arrive, never what Content-Length announces, and reads only
	// bodies that are JSON objects (see Reads).
	MaxBodyBytes int64

	// Reads reports whether the middleware reads the body of the POST r to look for a
	// keyed send. nil reads every POST, the safe default: a JSON-RPC endpoint may be
	// mounted on any path (a2a-go's own CLI and TCK servers mount it at "/"). A POST
	// that Reads turns down passes to the wrapped handler untouched, keyed or not, so
	// a keyed send on such a route runs without deduplication (the adapter's Executor
	// refuses one rather than run it); turn down only routes that are not A2A.
	//
	// Whatever Reads says, the middleware reads past the first bytes of a body only
	// when it is a JSON object (its first byte past JSON white space is '{'), since
	// an A2A send cannot be anything else. Other bodies (uploads, forms, binary
	// streams) reach the wrapped handler as they arrive: unbuffered, unlimited, with
	// their full-duplex streaming intact. Set Reads for routes that take large or
	// streamed JSON bodies that are not A2A, for example
	// func(r *http.Request) bool { return !strings.HasPrefix(r.URL.Path, "/import/") }.
	Reads func(r *http.Request) bool

	// IndexTimeout bounds each call to the index, within the request's own deadline;
	// a call that takes longer fails the keyed send closed (503). Default
	// [DefaultIndexTimeout].
	IndexTimeout time.Duration

	// Logger receives the middleware's logs; default slog.Default(). Every line about
	// a keyed send names its request_id, its key redacted by [idempotency.RedactKey]
	// (keys are never logged in full, at any level) and, once decided, its outcome.
	Logger *slog.Logger

	// Observe, when set, is called once per keyed send the middleware handled, when
	// it is done, with its [Outcome] and the time the middleware spent on it, for
	// metrics ([github.com/a2akit/idempotency/middleware/metrics] serves them to
	// Prometheus). It must be fast and safe for concurrent use.
	Observe func(Event)

	// Tasks, when set, reads tasks for replays directly instead of through a
	// synthesized GetTask sent to the wrapped handler. The round trip is the default
	// because it applies the server's own authorization to the retry. A streaming
	// retry still subscribes to a running task through the wrapped handler; Tasks
	// serves the snapshot of a finished one.
	Tasks TaskSource
}

// TaskSource reads a task's current state for a replay (adapter.TaskReader is one,
// over an a2a-go task store).
type TaskSource interface {
	// ReadTask returns the task taskID of tenant as A2A v1.0 JSON (a Task object, with
	// its full history), whatever protocol version the retry r speaks (the middleware
	// converts it for a v0.3 retry), or an error wrapping [ErrTaskNotFound] when it
	// does not exist (or the caller of r may not see it). r is the retry being
	// answered; tenant is empty for a v0.3 retry, which names none.
	ReadTask(ctx context.Context, r *http.Request, tenant, taskID string) ([]byte, error)
}

// ErrTaskNotFound is returned by a [TaskSource] for a task that does not exist.
var ErrTaskNotFound = errors.New("middleware: task not found")

// Outcome names what the middleware did with a keyed send, by what the client got.
// Each keyed send has exactly one.
type Outcome string

// Outcomes reported through [Options.Observe]. "Invalid params" is JSON-RPC error
// -32602 (HTTP 200) or HTTP+JSON 400 INVALID_ARGUMENT; every answer the middleware
// writes itself names the extension in A2A-Extensions, except for unsupported.
const (
	// OutcomeClaimed: a first send, forwarded; the client got the server's answer
	// with its task or Message reply (of a stream: at least its first event), or an
	// answer the middleware could not read, passed on as it was. [Event.BoundBy]
	// says what bound the key; when nothing did, the key stays pending until its
	// lease ends.
	OutcomeClaimed Outcome = "claimed"
	// OutcomeReleased: a first send, forwarded; the server answered an error before
	// any task existed, which the client got as the server wrote it, and the key was
	// released, so a retry runs the send again.
	OutcomeReleased Outcome = "released"
	// OutcomeFailed: the client got the server's own error answer, and the key stays
	// as it was: a first send that failed after its key was bound (retries replay
	// the task), or whose key could not be released (retries wait for the lease); or
	// a retry whose task the server refused to read (its own error, such as a denied
	// authorization, passed on).
	OutcomeFailed Outcome = "failed"
	// OutcomeReplayed: a retry, answered 200 with its first attempt's task as it is
	// now or its Message reply (a streaming retry: the task, then its live events).
	// Nothing ran.
	OutcomeReplayed Outcome = "replayed"
	// OutcomeInFlight: a retry answered 409 with Retry-After (JSON-RPC: a -32000
	// error at HTTP 409): its first attempt is still running and its task is not
	// known or not stored yet.
	OutcomeInFlight Outcome = "in_flight"
	// OutcomeConflict: invalid params, "already held": the key is held by a
	// different message (or another caller's, with Principal; or other content,
	// with CheckContent). Nothing ran.
	OutcomeConflict Outcome = "conflict"
	// OutcomeRefused: invalid params: a malformed key, a message without a
	// messageId, a scope that Options.Scope refused, or a caller Options.Principal
	// could not name. Nothing ran.
	OutcomeRefused Outcome = "refused"
	// OutcomeUnsupported: UnsupportedOperationError (JSON-RPC -32004, HTTP+JSON 400
	// UNIMPLEMENTED): the server cannot honour keys (no index, or one that says it
	// cannot). Nothing ran.
	OutcomeUnsupported Outcome = "unsupported"
	// OutcomeUnavailable: 503 with Retry-After: a call to the index failed or timed
	// out, the adapter could not bind the key (the agent did not run), or the
	// retry's task could not be read. Nothing ran; a retry with the same key may
	// succeed. Also 429 RESOURCE_EXHAUSTED with a Retry-After of an hour: the index
	// is full (the scope, or the whole index); retries of held keys still succeed.
	OutcomeUnavailable Outcome = "unavailable"
	// OutcomeTaskGone: TaskNotFoundError (JSON-RPC -32001, HTTP+JSON 404): a retry
	// whose first attempt's task no longer exists. The agent is not run again for
	// the key.
	OutcomeTaskGone Outcome = "task_gone"
	// OutcomeInternal: an internal error (JSON-RPC -32603, HTTP+JSON 500): the
	// middleware could not frame the key's task or reply for the retry.
	OutcomeInternal Outcome = "internal"
	// OutcomeUnreplayable: a retry whose first attempt ran but produced what the
	// kit could not keep (a reply past the index's bounds, an answer too large to
	// read): it is told that the reply cannot be replayed (JSON-RPC -32603,
	// HTTP+JSON 500 DATA_LOSS, gRPC DATA_LOSS). The agent is not run again.
	OutcomeUnreplayable Outcome = "unreplayable"
	// OutcomeAbandoned: the request's context ended (the client went away, or a
	// deadline set in front of the middleware passed) before the send was
	// answered: during a call to the index, while a retry waited or read its task,
	// or while a first send ran before its answer. The middleware answered nothing
	// (the server's answer to a forwarded send, if any, went to a closed
	// connection). A forwarded send's key is bound, released or left pending as the
	// send got; [Event.BoundBy] says whether it was bound.
	OutcomeAbandoned Outcome = "abandoned"
)

// ProtocolBinding names an A2A protocol binding, as A2A names them in agent cards.
type ProtocolBinding string

// The protocol bindings the middleware serves.
const (
	BindingJSONRPC  ProtocolBinding = "JSONRPC"
	BindingHTTPJSON ProtocolBinding = "HTTP+JSON"
	// BindingGRPC is reported by bindings that run the middleware's logic through
	// [Sends], such as the gRPC interceptors of package grpcbinding.
	BindingGRPC ProtocolBinding = "GRPC"
)

// ProtocolVersion names an A2A protocol version.
type ProtocolVersion string

// The protocol versions the middleware serves.
const (
	Version10 ProtocolVersion = "1.0"
	Version03 ProtocolVersion = "0.3"
)

// Event describes one keyed send for [Options.Observe].
type Event struct {
	Outcome Outcome
	// Binding is the protocol binding the send came in: [BindingJSONRPC] or
	// [BindingHTTPJSON], or [BindingGRPC] for the gRPC interceptors.
	Binding ProtocolBinding
	// Version is the A2A protocol version the send was made in: [Version10] or
	// [Version03].
	Version ProtocolVersion
	// Streaming is true for SendStreamingMessage, message/stream and message:stream.
	Streaming bool
	// Scope is the scope the key was claimed in.
	Scope string
	// RequestID is the request_id attribute of the middleware's log lines about this
	// send: the request's X-Request-Id when it is short and printable, or else one the
	// middleware made up.
	RequestID string
	// BoundBy is what bound the key to this send's task or reply: [BoundByAdapter],
	// [BoundByAnswer], or [BoundByNone] when this send bound nothing (a retry, a
	// refusal, or a first send whose key stays pending until its lease ends).
	BoundBy BoundBy

	// The time the middleware itself spent on the send, apart from the wrapped
	// handler's: IndexTime in calls to the index (claim, lookups, bind, release and,
	// when asked, [idempotency.Honouring]); WaitTime waiting for an in-flight first
	// attempt to make its task known; ReplayTime reading the first attempt's task to
	// answer a retry (until the first event, for a streaming retry). Each is zero when
	// the send did not do it.
	IndexTime, WaitTime, ReplayTime time.Duration
}

// BoundBy names what bound a key to what its first send produced.
type BoundBy string

// What bound a key, in [Event.BoundBy].
const (
	BoundByNone    BoundBy = ""        // this send bound nothing
	BoundByAdapter BoundBy = "adapter" // the adapter, before the agent ran
	BoundByAnswer  BoundBy = "answer"  // the middleware, from the wrapped handler's answer
)
