package middleware

import (
	"encoding/json"
	"net/http"
	"time"
)

// A binding is one A2A protocol binding in one protocol version: JSON-RPC v1.0 and
// HTTP+JSON v1.0 today. It holds everything that depends on the wire: which requests
// it serves, how a send is read (exactly as the server behind reads it), how answers
// and errors are framed, how the core reads a task or subscribes to one through the
// wrapped handler, and how the answers of the wrapped handler are read back.
//
// The core (claim, wait, replay decision, release) only talks to this interface, so
// another dialect (A2A v0.3, a future version) is one more implementation. Every JSON
// that crosses the interface is A2A v1.0: a task is a v1.0 Task object and a message a
// v1.0 Message object, whatever the wire says; a binding for another version converts.
type binding interface {
	// name is the binding's name in Events and logs ("JSONRPC", "HTTP+JSON").
	name() string

	// owns reports whether a POST request r is addressed to this binding. The core
	// asks the bindings in order; the first that owns r reads it and frames the
	// answers to it (including the 413 for an oversize body).
	owns(r *http.Request) bool

	// readSend reads a request the binding owns, whose body is body, and reports
	// whether it is a SendMessage or SendStreamingMessage that the server behind will
	// accept as such (well-formed envelope, known method, params that decode). It must
	// read the request exactly as the server behind will.
	readSend(r *http.Request, body []byte) (*send, bool)

	// sendOutcome reads the wrapped handler's non-streamed answer to a forwarded send.
	sendOutcome(status int, body []byte) outcome
	// eventOutcome reads the data of one Server-Sent Event of a streamed answer to a
	// forwarded send or to a subscription.
	eventOutcome(data []byte) outcome

	// result returns the JSON answering s with a task or a Message: the whole response
	// body of a non-streamed answer, or the data of one Server-Sent Event.
	result(s *send, res result) []byte
	// failure returns the HTTP status and the body answering s (nil for a request
	// that was not read as a send) with f, and whether the body must be framed as one
	// Server-Sent Event of a 200 text/event-stream answer.
	failure(s *send, f *failure) (status int, body []byte, sse bool)

	// taskRequest returns a request for the wrapped handler that reads task taskID,
	// shaped like s asks (history length), on behalf of the retry r.
	taskRequest(r *http.Request, s *send, taskID string) *http.Request
	// taskAnswer reads the wrapped handler's answer to a taskRequest: the Task, or the
	// failure to pass on to the client.
	taskAnswer(status int, body []byte) (task []byte, f *failure)
	// subscribeRequest returns a request for the wrapped handler that subscribes to
	// task taskID's live events on behalf of the retry r. The wrapped handler answers
	// with a stream of events whose data eventOutcome reads.
	subscribeRequest(r *http.Request, s *send, taskID string) *http.Request
}

// send is a recognised SendMessage or SendStreamingMessage, as the server behind the
// middleware reads it.
type send struct {
	b         binding
	streaming bool
	// id is the raw JSON-RPC id of the request ("null" when absent); nil elsewhere.
	id json.RawMessage
	// prefix is the HTTP+JSON path before /message:send, tenant segment included.
	prefix string

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
}

// result is what a send produced: a task or a Message, as A2A v1.0 JSON.
type result struct {
	task    []byte
	message []byte
}

// outcomeKind says what an answer of the wrapped handler carried.
type outcomeKind int

const (
	outcomeUnknown outcomeKind = iota // unreadable, or nothing
	outcomeTask                       // a task (its id in taskID, its JSON in task)
	outcomeMessage                    // a Message reply (its JSON in message)
	outcomeUpdate                     // a status or artifact update of task taskID
	outcomeFailed                     // an error (relayable as fail when known)
)

// outcome is what the core learns from an answer of the wrapped handler.
type outcome struct {
	kind    outcomeKind
	taskID  string
	task    []byte
	message []byte
	// fail is the error the wrapped handler answered, framed for passing on.
	fail *failure
}

// failKind classifies the errors the middleware answers with; each binding maps a
// kind to its own codes.
type failKind int

const (
	failInvalidParams failKind = iota + 1 // malformed key, key reused, bad scope
	failUnsupported                       // the index cannot honour keys
	failTaskNotFound                      // the key's task is gone
	failUnavailable                       // the index failed: 503
	failInFlight                          // the first attempt is still running: 409
	failTooLarge                          // body over MaxBodyBytes: 413
	failUnreadable                        // body could not be read: 400
	failRelayed                           // the wrapped handler's own error, passed on
)

// failure is an error answer in binding-neutral terms.
type failure struct {
	kind    failKind
	message string
	// retryAfter is the Retry-After delay of failUnavailable and failInFlight.
	retryAfter time.Duration
	// status and raw carry a failRelayed error: the HTTP status the wrapped handler
	// answered with and its error in the binding's own shape (the JSON-RPC error
	// object, or the whole HTTP+JSON error body).
	status int
	raw    []byte
	// taskNotFound marks a relayed error that says the task does not exist.
	taskNotFound bool
}

// notFound reports whether f says that the task does not exist.
func (f *failure) notFound() bool { return f.kind == failTaskNotFound || f.taskNotFound }
