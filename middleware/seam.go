package middleware

import (
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/seam"
)

// The dialects of protocol versions other than v1.0 are written against package seam
// (internal/seam), which imports nothing of the middleware. This file joins the two:
// foreign adapts such a dialect to the engine's dialect interface, native shows
// v1.0's dialects to it, and seamEngine is what it reuses of the engine. Only sends
// read in another version pass through here; v1.0's dialects are called directly.

// foreign is a dialect of another protocol version, in the framing binding.
type foreign struct {
	d       seam.Dialect
	binding ProtocolBinding
}

// foreignRPC is a JSON-RPC dialect of another protocol version.
type foreignRPC struct {
	foreign
	rpc seam.RPC
}

// foreignREST is an HTTP+JSON dialect of another protocol version.
type foreignREST struct {
	foreign
	rest seam.REST
	// prefix is rest.Prefix(), read once: route matches it on every HTTP+JSON send.
	prefix string
}

var (
	_ rpcDialect   = foreignRPC{}
	_ dialect      = foreignREST{}
	_ seam.Dialect = native{}
	_ seam.Engine  = seamEngine{}
	_ seam.Send    = (*send)(nil)
	_ seam.Failure = (*failure)(nil)
)

func (f foreign) framing() ProtocolBinding { return f.binding }
func (f foreign) version() ProtocolVersion { return ProtocolVersion(f.d.Version()) }

func (f foreign) sendAnswer(status int, body []byte) Produced {
	return producedOf(f.d.SendAnswer(status, body))
}

func (f foreign) eventAnswer(data []byte) Produced { return producedOf(f.d.EventAnswer(data)) }

func (f foreign) eventTask(data []byte) ([]byte, bool) { return f.d.EventTask(data) }

func (f foreign) product(s *send, p product) ([]byte, error) {
	return f.d.Product(s, seam.Product{Task: p.task, Message: p.message})
}

func (f foreign) failure(s *send, fl *failure) (int, []byte, bool) { return f.d.Failure(s, fl) }

func (f foreign) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	return f.d.TaskRequest(r, s, taskID)
}

func (f foreign) taskAnswer(status int, body []byte) ([]byte, *failure) {
	task, fl := f.d.TaskAnswer(status, body)
	return task, engineFailure(fl)
}

func (f foreign) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	return f.d.SubscribeRequest(r, s, taskID)
}

func (f foreignRPC) readParams(s *send, params json.RawMessage) bool {
	p, ok := f.rpc.ReadParams(params)
	if ok {
		fillParams(s, p)
	}
	return ok
}

// readSend reads body as a send of the dialect at prefix, or reports false.
func (f foreignREST) readSend(prefix string, streaming bool, body []byte) (*send, bool) {
	p, ok := f.rest.ReadSend(body)
	if !ok {
		return nil, false
	}
	s := &send{d: f, prefix: prefix, streaming: streaming}
	fillParams(s, p)
	return s, true
}

// fillParams copies what the core needs from p into s.
func fillParams(s *send, p seam.Params) {
	fillSend(s, p.Config, p.Message)
}

// HistoryLength is s.historyLength, for seam.Send.
func (s *send) HistoryLength() *int { return s.historyLength }

// NotFound is f.notFound, for seam.Failure.
func (f *failure) NotFound() bool { return f.notFound() }

// sendOf returns the send behind s (nil for none).
func sendOf(s seam.Send) *send {
	p, _ := s.(*send)
	return p
}

// engineFailure returns the failure behind f (nil for none).
func engineFailure(f seam.Failure) *failure {
	p, _ := f.(*failure)
	return p
}

// seamFailure returns f as a seam.Failure: nil for none.
func seamFailure(f *failure) seam.Failure {
	if f == nil {
		return nil
	}
	return f
}

func producedOf(a seam.Answer) Produced {
	return Produced{TaskID: a.TaskID, Reply: a.Reply, Refused: a.Refused, update: a.Update, fail: engineFailure(a.Relayed)}
}

func answerOf(p Produced) seam.Answer {
	return seam.Answer{TaskID: p.TaskID, Update: p.update, Reply: p.Reply, Refused: p.Refused, Relayed: seamFailure(p.fail)}
}

// native is one of v1.0's dialects, as a dialect of another version reuses it.
type native struct{ d dialect }

func (n native) Version() string { return string(n.d.version()) }

func (n native) SendAnswer(status int, body []byte) seam.Answer {
	return answerOf(n.d.sendAnswer(status, body))
}

func (n native) EventAnswer(data []byte) seam.Answer { return answerOf(n.d.eventAnswer(data)) }

func (n native) EventTask(data []byte) ([]byte, bool) { return n.d.eventTask(data) }

func (n native) Product(s seam.Send, p seam.Product) ([]byte, error) {
	return n.d.product(sendOf(s), product{task: p.Task, message: p.Message})
}

func (n native) Failure(s seam.Send, f seam.Failure) (int, []byte, bool) {
	return n.d.failure(sendOf(s), engineFailure(f))
}

func (n native) TaskRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	return n.d.taskRequest(r, sendOf(s), taskID)
}

func (n native) TaskAnswer(status int, body []byte) ([]byte, seam.Failure) {
	task, f := n.d.taskAnswer(status, body)
	return task, seamFailure(f)
}

func (n native) SubscribeRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	return n.d.subscribeRequest(r, sendOf(s), taskID)
}

// seamEngine is what a dialect of another version reuses of the engine.
type seamEngine struct{}

func (seamEngine) JSONRPC() seam.Dialect  { return native{jsonrpc10{}} }
func (seamEngine) HTTPJSON() seam.Dialect { return native{rest10{}} }

func (seamEngine) RPCResult(data []byte) (json.RawMessage, seam.Answer) {
	result, f := readResponse(data)
	if f != nil {
		return nil, seam.Answer{Refused: f.refuses, Relayed: f}
	}
	return result, seam.Answer{}
}

func (seamEngine) RPCEnvelope(s seam.Send, result []byte) []byte {
	return rpcEnvelope(sendOf(s), "result", result)
}

func (seamEngine) RPCFailure(s seam.Send, f seam.Failure, withInfo bool) (int, []byte, bool) {
	return rpcFailure(sendOf(s), engineFailure(f), withInfo)
}

func (seamEngine) RPCCall(r *http.Request, s seam.Send, method string, params any, accept string) *http.Request {
	return rpcCall(r, sendOf(s), method, params, accept)
}

func (seamEngine) ObjectID(raw json.RawMessage, name string) string { return objectID(raw, name) }

func (seamEngine) Unframable(err error) seam.Failure { return taskUnframable(err) }
