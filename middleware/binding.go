package middleware

import (
	"encoding/json"
	"net/http"
	"time"
)

// A binding is one A2A protocol binding in one protocol version (a dialect):
// JSON-RPC and HTTP+JSON, each in A2A v1.0 and v0.3. It holds everything that depends
// on the wire: which requests it serves, how a send is read (exactly as the server
// behind reads it), how answers and errors are framed, how the core reads a task or
// subscribes to one through the wrapped handler, and how the answers of the wrapped
// handler are read back.
//
// The core (claim, wait, replay decision, release) only talks to this interface, so
// another dialect (a future A2A version, gRPC) is one more implementation added to the
// list New builds. Every JSON that crosses the interface is A2A v1.0: a task is a v1.0
// Task object and a message a v1.0 Message object, whatever the wire says, because
// the index stores Message replies as v1.0 JSON and a key claimed in one dialect may
// be retried in another. A binding for another version converts at its edges.
type binding interface {
	// name is the binding's name in Events and logs ("JSONRPC", "HTTP+JSON").
	name() string
	// version is the A2A protocol version the binding speaks ("1.0", "0.3"), in
	// Events and logs.
	version() string

	// owns reports whether a POST request r may be addressed to this binding, from
	// r alone (its path), before its body is read. The first binding in order that
	// owns r frames the answer to a body that cannot be read (too large, broken).
	owns(r *http.Request) bool

	// readSend reads a request the binding owns, whose body is body, and reports
	// whether it is a send of this binding (SendMessage or SendStreamingMessage, in the
	// binding's own names) that the server behind will accept as such: well-formed
	// envelope, known method, params that decode. It must read the request exactly as
	// the server behind will. The core asks the bindings that own r in order, and the
	// first that reads a send handles it; a binding that sees a body of another
	// dialect at its paths returns false, and the next one is asked.
	readSend(r *http.Request, body []byte) (*send, bool)

	// sendOutcome reads the wrapped handler's non-streamed answer to a forwarded send.
	sendOutcome(status int, body []byte) outcome
	// eventOutcome reads the data of one Server-Sent Event of a streamed answer to a
	// forwarded send or to a subscription.
	eventOutcome(data []byte) outcome
	// eventTask returns the task that the data of a Server-Sent Event carries (one
	// eventOutcome read as outcomeTask), as v1.0 JSON, or false when it cannot.
	eventTask(data []byte) ([]byte, bool)

	// result returns the JSON answering s with a task or a Message: the whole response
	// body of a non-streamed answer, or the data of one Server-Sent Event. It fails only
	// when res cannot be put in the binding's shape (a task from Options.Tasks that is
	// not v1.0 JSON).
	result(s *send, res result) ([]byte, error)
	// failure returns the HTTP status and the body answering s (nil for a request
	// that was not read as a send) with f, and whether the body must be framed as one
	// Server-Sent Event of a 200 text/event-stream answer.
	failure(s *send, f *failure) (status int, body []byte, sse bool)
	// extensionHeaders are the response headers that name the extension on an answer
	// to a keyed send.
	extensionHeaders() []string

	// taskRequest returns a request for the wrapped handler that reads task taskID,
	// shaped like s asks (history length), on behalf of the retry r.
	taskRequest(r *http.Request, s *send, taskID string) *http.Request
	// taskAnswer reads the wrapped handler's answer to a taskRequest: the Task (v1.0
	// JSON), or the failure to pass on to the client.
	taskAnswer(status int, body []byte) (task []byte, f *failure)
	// subscribeRequest returns a request for the wrapped handler that subscribes to
	// task taskID's live events on behalf of the retry r. The wrapped handler answers
	// with a stream of events whose data eventOutcome reads.
	subscribeRequest(r *http.Request, s *send, taskID string) *http.Request
}

// readSend returns the send that the first of bindings owning r reads from body, or
// nil when none does.
func readSend(bindings []binding, r *http.Request, body []byte) *send {
	for _, b := range bindings {
		if !b.owns(r) {
			continue
		}
		if s, ok := b.readSend(r, body); ok {
			return s
		}
	}
	return nil
}

// bindingFor returns the first of bindings that owns r; the last binding is the
// fallback.
func bindingFor(bindings []binding, r *http.Request) binding {
	for _, b := range bindings {
		if b.owns(r) {
			return b
		}
	}
	return bindings[len(bindings)-1]
}

// send is a recognised SendMessage or SendStreamingMessage, as the server behind the
// middleware reads it.
type send struct {
	b         binding
	streaming bool
	// id is the raw JSON-RPC id of the request ("null" when absent); nil elsewhere.
	id json.RawMessage
	// prefix is the HTTP+JSON path before /message:send, tenant segment (or v0.3's
	// /v1) included.
	prefix string

	// tenant is the A2A tenant the request names (none in v0.3).
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
	outcomeTask                       // a task (its id in taskID; eventTask reads it)
	outcomeMessage                    // a Message reply (its v1.0 JSON in message)
	outcomeUpdate                     // a status or artifact update of task taskID
	outcomeFailed                     // an error (relayable as fail when known)
)

// outcome is what the core learns from an answer of the wrapped handler.
type outcome struct {
	kind    outcomeKind
	taskID  string
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
	failInternal                          // a task or reply the binding could not frame
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
