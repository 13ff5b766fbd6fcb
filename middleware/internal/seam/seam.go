// Package seam is the boundary between the middleware's engine and the dialects of
// A2A protocol versions other than v1.0 (v0.3's, in package v03).
//
// A dialect is one cell of the grid the middleware serves: a framing (JSON-RPC or
// HTTP+JSON) in one protocol version. The engine holds v1.0's dialects itself; a
// dialect of another version is written against this package alone: it implements
// RPC or REST, and reuses v1.0's framing through Engine where the wire is the same.
// Nothing here imports the middleware, so a version's package is deleted whole, with
// the one line that registers it.
//
// Every JSON that crosses the seam is A2A v1.0: a task is a v1.0 Task object and a
// message a v1.0 Message object, whatever the wire says, because the index stores
// Message replies as v1.0 JSON and a key claimed in one dialect may be retried in
// another. A dialect of another version converts at its edges.
package seam

import (
	"encoding/json"
	"net/http"
)

// Dialect is what the engine asks of the dialect a send was read in: how answers and
// errors are framed, how a task is read or subscribed to through the wrapped handler,
// and how the wrapped handler's answers are read back.
type Dialect interface {
	// Version is the A2A protocol version the dialect speaks ("0.3"), in Events and
	// logs; it also names the response headers that carry the extension.
	Version() string

	// SendAnswer reads the wrapped handler's non-streamed answer to a forwarded send.
	SendAnswer(status int, body []byte) Answer
	// EventAnswer reads the data of one Server-Sent Event of a streamed answer to a
	// forwarded send or to a subscription.
	EventAnswer(data []byte) Answer
	// EventTask returns the task that the data of a Server-Sent Event carries, or
	// false when it carries none.
	EventTask(data []byte) ([]byte, bool)

	// Product returns the JSON answering s with p: the whole response body of a
	// non-streamed answer, or the data of one Server-Sent Event. It fails only when p
	// cannot be put in the dialect's shape.
	Product(s Send, p Product) ([]byte, error)
	// Failure returns the HTTP status and the body answering s (nil for a request
	// that was not read as a send) with f, and whether the body must be framed as one
	// Server-Sent Event of a 200 text/event-stream answer.
	Failure(s Send, f Failure) (status int, body []byte, sse bool)

	// TaskRequest returns a request for the wrapped handler that reads task taskID,
	// shaped like s asks (history length), on behalf of the retry r.
	TaskRequest(r *http.Request, s Send, taskID string) *http.Request
	// TaskAnswer reads the wrapped handler's answer to a TaskRequest: the task, or
	// the failure to pass on to the client.
	TaskAnswer(status int, body []byte) ([]byte, Failure)
	// SubscribeRequest returns a request for the wrapped handler that subscribes to
	// task taskID's live events on behalf of the retry r; EventAnswer reads them.
	SubscribeRequest(r *http.Request, s Send, taskID string) *http.Request
}

// RPC is a JSON-RPC dialect. route reads a JSON-RPC call as the engine reads v1.0's
// (envelope, id) and hands the params of the dialect's send methods to ReadParams.
type RPC interface {
	Dialect
	// Methods returns the names of the dialect's send and streaming send methods.
	Methods() (send, stream string)
	// ReadParams reads a send call's params exactly as the server behind decodes
	// them, and reports whether they decode (the server refuses the call before
	// anything runs when they do not).
	ReadParams(params json.RawMessage) (Params, bool)
}

// REST is an HTTP+JSON dialect. route tries it before v1.0's for a POST to
// {prefix}/message:send or {prefix}/message:stream whose prefix ends in Prefix.
type REST interface {
	Dialect
	// Prefix is the path segment the dialect serves every route under ("/v1").
	Prefix() string
	// ReadSend reads body as a send of the dialect, as its server decodes it, and
	// reports whether it is one; a body it does not take goes to v1.0's reading.
	ReadSend(body []byte) (Params, bool)
}

// Engine is what a dialect of another version reuses of the engine: v1.0's dialects
// for what both versions frame alike, and the pieces of the JSON-RPC framing that
// they share.
type Engine interface {
	// JSONRPC and HTTPJSON are v1.0's dialects of the two framings.
	JSONRPC() Dialect
	HTTPJSON() Dialect

	// RPCResult reads a JSON-RPC response: its result (valid JSON), or nil and the
	// Answer to give when the response carries an error (relayed, refused when its
	// code is a definite refusal) or cannot be read (the zero Answer).
	RPCResult(data []byte) (json.RawMessage, Answer)
	// RPCEnvelope returns the JSON-RPC response to s whose result is result.
	RPCEnvelope(s Send, result []byte) []byte
	// RPCFailure frames f as a JSON-RPC error answering s, with a
	// google.rpc.ErrorInfo in its data when withInfo is set (see Dialect.Failure).
	RPCFailure(s Send, f Failure, withInfo bool) (status int, body []byte, sse bool)
	// RPCCall returns a JSON-RPC call of method with params (marshalled as JSON) to
	// the URL of r, carrying r's headers and s's id, for the wrapped handler.
	RPCCall(r *http.Request, s Send, method string, params any, accept string) *http.Request
	// ObjectID returns the string member name of raw, valid JSON, as json.Unmarshal
	// into a struct with that one string field reads it ("" when it cannot).
	ObjectID(raw json.RawMessage, name string) string
	// Unframable is the failure of a task read whose answer the dialect cannot
	// convert (err says why).
	Unframable(err error) Failure
}

// Send is a send the engine read, as a dialect sees it.
type Send interface {
	// HistoryLength is the history length the send asks for, or nil.
	HistoryLength() *int
}

// Failure is an error answer the engine made; a dialect passes it on unchanged.
type Failure interface {
	// NotFound reports whether the failure says that the task does not exist.
	NotFound() bool
}

// Answer is what an answer of the wrapped handler to a send (or an event of one)
// produced: a task, an update of one, or a Message.
type Answer struct {
	// TaskID is the task the answer names, that of an update when Update is set.
	TaskID string
	Update bool
	// Reply is a Message reply, as v1.0 JSON.
	Reply []byte
	// Refused: the server refused the send before any task existed (see the
	// engine's rule of ambiguity).
	Refused bool
	// Relayed is the server's own error, framed to be passed on, or nil.
	Relayed Failure
}

// Product is what a send produced: a task or a Message, as v1.0 JSON.
type Product struct {
	Task    []byte
	Message []byte
}

// Params is what a send's params carry that the engine needs.
type Params struct {
	Config  *Config  `json:"configuration,omitempty"`
	Message *Message `json:"message"`
}

// Config mirrors the fields of a2a.SendMessageConfig the engine needs, with the
// same Go types and json tags: the engine decodes v1.0's sends into it, and a
// dialect may decode into it too.
type Config struct {
	HistoryLength *int `json:"historyLength,omitempty"`
}

// Message mirrors the fields of a2a.Message the engine needs, with the same Go types
// and json tags: the engine decodes v1.0's sends into it, and a dialect may decode
// into it too.
type Message struct {
	ID       string         `json:"messageId"`
	Metadata map[string]any `json:"metadata,omitempty"`
	TaskID   string         `json:"taskId,omitempty"`
}
