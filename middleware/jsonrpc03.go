package middleware

import (
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/v03/kindjson"
)

// jsonrpc03 is the JSON-RPC binding of A2A v0.3, as a2a-go serves it both in
// its v0.3 compatibility layer (a2acompat/a2av0.NewJSONRPCHandler) and in a2a-go
// v0.3.x (a2asrv.NewJSONRPCHandler): methods message/send and message/stream, params
// {message, configuration?, metadata?} without a tenant, a result that is the bare
// Task or Message with a "kind" member, stream events whose results carry kind task,
// message, status-update or artifact-update. A task is read with tasks/get and
// followed with tasks/resubscribe. Like v1.0's, it is addressed at any path that is
// not an HTTP+JSON send; route tells the two apart by method name.
//
// Its own errors carry the v1.0 codes (the same in v0.3) and no data: a2a-go's v0.3
// compatibility client reads data as a list of google.rpc details, a2a-go v0.3.x's
// client reads it as an object, each fails on the other's shape, and both type an
// error without data by its code.
type jsonrpc03 struct{}

// JSON-RPC method names of A2A v0.3.
const (
	method03Send        = "message/send"
	method03Stream      = "message/stream"
	method03GetTask     = "tasks/get"
	method03Resubscribe = "tasks/resubscribe"
)

func (jsonrpc03) framing() ProtocolBinding { return BindingJSONRPC }
func (jsonrpc03) version() ProtocolVersion { return Version03 }

// rpc03Params mirrors a2a.MessageSendParams of a2a-go v0.3.x (the fields the
// middleware needs, with the same types and tags), which both v0.3 handlers decode
// params into with encoding/json. It has no tenant: a v0.3 server ignores one.
type rpc03Params struct {
	Config  *sendConfig `json:"configuration,omitempty"`
	Message *message    `json:"message"`
}

// readParams reads the params of a send call into s, as both v0.3 handlers decode
// them, and reports whether they decode.
func (jsonrpc03) readParams(s *send, params json.RawMessage) bool {
	var p rpc03Params
	if err := json.Unmarshal(params, &p); err != nil {
		return false
	}
	fillSend(s, p.Config, p.Message)
	return true
}

func (b jsonrpc03) sendAnswer(status int, body []byte) Produced {
	if status != http.StatusOK {
		return Produced{Refused: statusRefuses(status)}
	}
	return b.eventAnswer(body)
}

func (jsonrpc03) eventAnswer(data []byte) Produced {
	result, fail := readResponse(data)
	if fail != nil {
		return Produced{Refused: fail.refuses, fail: fail}
	}
	switch kindjson.Kind(result) {
	case "task":
		if id := objectID(result, "id"); id != "" {
			return Produced{TaskID: id}
		}
	case "message":
		if msg, err := kindjson.MessageToV1(result); err == nil {
			return Produced{Reply: msg}
		}
	case "status-update", "artifact-update":
		if id := objectID(result, "taskId"); id != "" {
			return Produced{TaskID: id, update: true}
		}
	}
	return Produced{}
}

func (jsonrpc03) eventTask(data []byte) ([]byte, bool) {
	result, fail := readResponse(data)
	if fail != nil || kindjson.Kind(result) != "task" {
		return nil, false
	}
	task, err := kindjson.TaskToV1(result)
	return task, err == nil
}

func (jsonrpc03) product(s *send, res product) ([]byte, error) {
	var v []byte
	var err error
	if res.message != nil {
		v, err = kindjson.MessageFromV1(res.message)
	} else {
		v, err = kindjson.TaskFromV1(res.task)
	}
	if err != nil {
		return nil, err
	}
	return rpcEnvelope(s, "result", v), nil
}

func (jsonrpc03) failure(s *send, f *failure) (int, []byte, bool) {
	return rpcFailure(s, f, false)
}

func (jsonrpc03) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	params := struct {
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength,omitempty"`
	}{taskID, s.historyLength}
	return rpcCall(r, s, method03GetTask, params, "application/json")
}

func (jsonrpc03) taskAnswer(status int, body []byte) ([]byte, *failure) {
	raw, f := rpcTaskAnswer(status, body)
	if f != nil {
		return nil, f
	}
	task, err := kindjson.TaskToV1(raw)
	if err != nil {
		return nil, taskUnframable(err)
	}
	return task, nil
}

func (jsonrpc03) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	params := struct {
		ID string `json:"id"`
	}{taskID}
	return rpcCall(r, s, method03Resubscribe, params, "text/event-stream")
}
