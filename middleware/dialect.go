package middleware

import (
	"encoding/json"
	"net/http"
	"time"
)

// A dialect is one cell of the grid the middleware serves: a framing (JSON-RPC or
// HTTP+JSON, the A2A protocol bindings) in one protocol version. route
// picks the dialect of a request and reads its send; the dialect holds everything
// else that depends on the wire: how answers and errors are framed, how the core
// reads a task or subscribes to one through the wrapped handler, and how the answers
// of the wrapped handler are read back.
//
// Every JSON that crosses the interface is A2A v1.0: a task is a v1.0 Task object and
// a message a v1.0 Message object, whatever the wire says, because the index stores
// Message replies as v1.0 JSON and a key claimed in one dialect may be retried in
// another. A dialect of another version converts at its edges: it is written against
// package internal/seam, whose Dialect mirrors this interface, and adapted in seam.go.
type dialect interface {
	// framing is the dialect's protocol binding, in Events and logs.
	framing() ProtocolBinding
	// version is the A2A protocol version the dialect speaks, in Events and logs; it
	// also names the response headers that carry the extension.
	version() ProtocolVersion

	// sendAnswer reads the wrapped handler's non-streamed answer to a forwarded send,
	// by the rule of ambiguity (see ruleOf).
	sendAnswer(status int, body []byte) Produced
	// eventAnswer reads the data of one Server-Sent Event of a streamed answer to a
	// forwarded send or to a subscription.
	eventAnswer(data []byte) Produced
	// eventTask returns the task that the data of a Server-Sent Event carries (one
	// eventAnswer read as a Task), as v1.0 JSON, or false when it cannot.
	eventTask(data []byte) ([]byte, bool)

	// product returns the JSON answering s with a task or a Message: the whole
	// response body of a non-streamed answer, or the data of one Server-Sent Event. It
	// fails only when p cannot be put in the dialect's shape (a task from
	// Options.Tasks that is not v1.0 JSON).
	product(s *send, p product) ([]byte, error)
	// failure returns the HTTP status and the body answering s (nil for a request
	// that was not read as a send) with f, and whether the body must be framed as one
	// Server-Sent Event of a 200 text/event-stream answer.
	failure(s *send, f *failure) (status int, body []byte, sse bool)

	// taskRequest returns a request for the wrapped handler that reads task taskID,
	// shaped like s asks (history length), on behalf of the retry r.
	taskRequest(r *http.Request, s *send, taskID string) *http.Request
	// taskAnswer reads the wrapped handler's answer to a taskRequest: the Task (v1.0
	// JSON), or the failure to pass on to the client.
	taskAnswer(status int, body []byte) (task []byte, f *failure)
	// subscribeRequest returns a request for the wrapped handler that subscribes to
	// task taskID's live events on behalf of the retry r. The wrapped handler answers
	// with a stream of events whose data eventAnswer reads.
	subscribeRequest(r *http.Request, s *send, taskID string) *http.Request
}

// send is a recognised SendMessage or SendStreamingMessage, as the server behind the
// middleware reads it.
type send struct {
	d         dialect
	streaming bool
	// id is the raw JSON-RPC id of the request ("null" when absent); nil elsewhere.
	id json.RawMessage
	// prefix is the HTTP+JSON path before /message:send, tenant segment (or another
	// version's prefix) included.
	prefix string

	// tenant is the A2A tenant the request names (none in versions without one).
	tenant     string
	hasMessage bool
	messageID  string
	// taskID is the task a follow-up message continues, or empty.
	taskID string
	// historyLength shapes the task of a replay. (returnImmediately is not read: a
	// replay answers the task as it is now, blocking or not.)
	historyLength *int

	// keyed reports whether the message's metadata names the idempotency key, and key
	// and keyErr are what idempotency.KeyOf made of it.
	keyed  bool
	key    string
	keyErr error
	// ambiguous marks a body that the two bindings read as two different sends (see
	// route); the middleware refuses it.
	ambiguous bool
}

// product is what a send produced: a task or a Message, as A2A v1.0 JSON.
type product struct {
	task    []byte
	message []byte
}

// isTask reports whether p names a Task (not an update of one).
func (p Produced) isTask() bool { return p.TaskID != "" && !p.update }

// isEvent reports whether p carries an event of a send: a task, an update or a
// Message.
func (p Produced) isEvent() bool { return p.TaskID != "" || p.Reply != nil }

// failKind classifies the errors the middleware answers with; each dialect maps a
// kind to its own codes.
type failKind int

const (
	failInvalidParams failKind = iota + 1 // malformed key, key reused, bad scope
	failUnsupported                       // the index cannot honour keys
	failTaskNotFound                      // the key's task is gone
	failUnavailable                       // the index failed: 503
	failExhausted                         // the index is full: 429
	failInFlight                          // the first attempt is still running: 409
	failTooLarge                          // body over MaxBodyBytes: 413
	failUnreadable                        // body could not be read: 400
	failInternal                          // a task or reply the dialect could not frame
	failRelayed                           // the wrapped handler's own error, passed on
	failUnreplayable                      // the first attempt ran; its reply cannot be replayed
	failNotServed                         // nothing serves the retry's task read there: 4xx
	failUnknown                           // the first attempt's outcome is unknown: 502
)

// failure is an error answer in dialect-neutral terms.
type failure struct {
	kind    failKind
	message string
	// reason is the kit's own ErrorInfo reason, when not its kind's (see
	// failure.kitReason).
	reason string
	// retryAfter is the Retry-After delay of failUnavailable, failExhausted and
	// failInFlight.
	retryAfter time.Duration
	// status and raw carry a failRelayed error: the HTTP status the wrapped handler
	// answered with and its error in the dialect's own shape (the JSON-RPC error
	// object, or the whole HTTP+JSON error body).
	status int
	raw    []byte
	// taskNotFound marks a relayed error that says the task does not exist.
	taskNotFound bool
	// refuses marks a relayed error that is a definite refusal (see ruleOf).
	refuses bool
}

// notFound reports whether f says that the task does not exist.
func (f *failure) notFound() bool { return f.kind == failTaskNotFound || f.taskNotFound }

// fromFirstAttempt reports whether f, answering a retry, is news of its first
// attempt (its task is gone, its reply cannot be replayed) rather than a refusal.
func (f *failure) fromFirstAttempt() bool { return f.notFound() || f.kind == failUnreplayable }
