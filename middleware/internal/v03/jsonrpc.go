package v03

import (
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/seam"
	"github.com/a2akit/idempotency/middleware/internal/v03/kindjson"
)

// jsonrpc is the JSON-RPC binding of A2A v0.3, as a2a-go serves it both in
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
type jsonrpc struct{ e seam.Engine }

// JSON-RPC method names of A2A v0.3.
const (
	methodSend        = "message/send"
	methodStream      = "message/stream"
	methodGetTask     = "tasks/get"
	methodResubscribe = "tasks/resubscribe"
)

func (jsonrpc) Version() string                { return Version }
func (jsonrpc) Methods() (send, stream string) { return methodSend, methodStream }

// ReadParams reads the params of a send call, as both v0.3 handlers decode them,
// and reports whether they decode. seam.Params mirrors a2a.MessageSendParams of
// a2a-go v0.3.x (the fields the middleware needs, with the same types and tags),
// which both v0.3 handlers decode params into with encoding/json. It has no tenant:
// a v0.3 server ignores one.
func (jsonrpc) ReadParams(params json.RawMessage) (seam.Params, bool) {
	var p seam.Params
	if err := json.Unmarshal(params, &p); err != nil {
		return seam.Params{}, false
	}
	return p, true
}

func (b jsonrpc) SendAnswer(status int, body []byte) seam.Answer {
	if status != http.StatusOK {
		return b.e.JSONRPC().SendAnswer(status, body)
	}
	return b.EventAnswer(body)
}

func (b jsonrpc) EventAnswer(data []byte) seam.Answer {
	result, failed := b.e.RPCResult(data)
	if result == nil {
		return failed
	}
	switch kindjson.Kind(result) {
	case "task":
		if id := b.e.ObjectID(result, "id"); id != "" {
			return seam.Answer{TaskID: id}
		}
	case "message":
		if msg, err := kindjson.MessageToV1(result); err == nil {
			return seam.Answer{Reply: msg}
		}
	case "status-update", "artifact-update":
		if id := b.e.ObjectID(result, "taskId"); id != "" {
			return seam.Answer{TaskID: id, Update: true}
		}
	}
	return seam.Answer{}
}

func (b jsonrpc) EventTask(data []byte) ([]byte, bool) {
	result, _ := b.e.RPCResult(data)
	if kindjson.Kind(result) != "task" {
		return nil, false
	}
	task, err := kindjson.TaskToV1(result)
	return task, err == nil
}

func (b jsonrpc) Product(s seam.Send, res seam.Product) ([]byte, error) {
	var v []byte
	var err error
	if res.Message != nil {
		v, err = kindjson.MessageFromV1(res.Message)
	} else {
		v, err = kindjson.TaskFromV1(res.Task)
	}
	if err != nil {
		return nil, err
	}
	return b.e.RPCEnvelope(s, v), nil
}

func (b jsonrpc) Failure(s seam.Send, f seam.Failure) (int, []byte, bool) {
	return b.e.RPCFailure(s, f, false)
}

func (b jsonrpc) TaskRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	params := struct {
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength,omitempty"`
	}{taskID, s.HistoryLength()}
	return b.e.RPCCall(r, s, methodGetTask, params, "application/json")
}

func (b jsonrpc) TaskAnswer(status int, body []byte) ([]byte, seam.Failure) {
	raw, f := b.e.JSONRPC().TaskAnswer(status, body)
	return taskToV1(b.e, raw, f, kindjson.TaskToV1)
}

func (b jsonrpc) SubscribeRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	params := struct {
		ID string `json:"id"`
	}{taskID}
	return b.e.RPCCall(r, s, methodResubscribe, params, "text/event-stream")
}
