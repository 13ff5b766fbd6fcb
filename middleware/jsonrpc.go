package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/member"
)

// jsonrpc10 is the JSON-RPC binding of A2A v1.0, as a2a-go's
// a2asrv.NewJSONRPCHandler serves it: every POST that is not an HTTP+JSON send is a
// candidate, whatever its path, and the method names the operation. This file also
// holds the JSON-RPC framing both versions share (calls, envelopes, errors).
type jsonrpc10 struct{}

// JSON-RPC method names of A2A v1.0.
const (
	methodSendMessage          = "SendMessage"
	methodSendStreamingMessage = "SendStreamingMessage"
	methodGetTask              = "GetTask"
	methodSubscribeToTask      = "SubscribeToTask"
)

// JSON-RPC error codes the middleware answers with, the same in A2A v1.0 and v0.3.
const (
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	codeServerError    = -32000
	codeTaskNotFound   = -32001
	codeUnsupported    = -32004
)

func (jsonrpc10) framing() ProtocolBinding { return BindingJSONRPC }
func (jsonrpc10) version() ProtocolVersion { return Version10 }

// rpcRequest mirrors a2a-go's internal/jsonrpc.ServerRequest, which
// a2asrv.NewJSONRPCHandler decodes the body into with a json.Decoder (so trailing
// bytes after the first value are ignored). The id is kept raw, to be echoed.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      json.RawMessage `json:"id"`
}

// readParams reads the params of a send call into s, as a2asrv decodes them, and
// reports whether they decode.
func (jsonrpc10) readParams(s *send, params json.RawMessage) bool {
	var p sendParams
	if err := json.Unmarshal(params, &p); err != nil {
		return false
	}
	p.fill(s)
	return true
}

// readCall reads a JSON-RPC call as a2a-go's JSON-RPC handlers (v1.0, and v0.3 in
// a2acompat/a2av0 and in a2a-go v0.3.x) decode it: with a json.Decoder, so bytes after
// the first value are ignored. It reports false for what they answer -32700 or -32600
// without running anything: no JSON object, an id that is not a string, a number or
// null, a version other than 2.0. An absent id reads as null.
func readCall(body []byte) (rpcRequest, bool) {
	var req rpcRequest
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return rpcRequest{}, false
	}
	if !validID(req.ID) || req.JSONRPC != "2.0" {
		return rpcRequest{}, false
	}
	if req.ID == nil {
		req.ID = json.RawMessage("null")
	}
	return req, true
}

// validID reports whether a raw id is one a2a-go accepts: absent, null, a string or a
// number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	switch c := id[0]; {
	case c == 'n', c == '"', c == '-', '0' <= c && c <= '9':
		return true
	}
	return false
}

// rpcResponse is the part of a JSON-RPC response the middleware reads.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (b jsonrpc10) sendAnswer(status int, body []byte) Produced {
	if status != http.StatusOK {
		return Produced{Refused: statusRefuses(status)}
	}
	return b.eventAnswer(body)
}

func (jsonrpc10) eventAnswer(data []byte) Produced {
	result, fail := readResponse(data)
	if fail != nil {
		return Produced{Refused: fail.refuses, fail: fail}
	}
	return validStreamResponseAnswer(result)
}

func (jsonrpc10) eventTask(data []byte) ([]byte, bool) {
	result, fail := readResponse(data)
	if fail != nil {
		return nil, false
	}
	return validStreamResponseTask(result)
}

// readResponse reads a JSON-RPC response: its result, or the error it carries as a
// failure to relay (marked when its code is a definite refusal). An unreadable
// response has neither. The result is valid JSON and aliases data.
func readResponse(data []byte) (json.RawMessage, *failure) {
	resp, ok := readRPCResponse(data)
	if !ok {
		return nil, nil
	}
	if !isNull(resp.Error) {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(resp.Error, &e)
		return nil, &failure{kind: failRelayed, status: http.StatusOK, raw: bytes.Clone(resp.Error), refuses: rpcRefuses(e.Code)}
	}
	return resp.Result, nil
}

// readRPCResponse reads data as json.Unmarshal into an rpcResponse does (the last
// member of a name winning, null kept as "null"), with one scan to validate and
// one walk; the members alias data.
func readRPCResponse(data []byte) (rpcResponse, bool) {
	if !json.Valid(data) {
		return rpcResponse{}, false
	}
	var resp rpcResponse
	o, ok := member.Members(data)
	if !ok {
		// null decodes into the zero rpcResponse; any other value is a type error.
		return resp, isNull(bytes.TrimSpace(data))
	}
	for name, value, ok := o.Next(); ok; name, value, ok = o.Next() {
		switch {
		case member.NameIs(name, "result"):
			resp.Result = value
		case member.NameIs(name, "error"):
			resp.Error = value
		}
	}
	return resp, true
}

func (jsonrpc10) product(s *send, res product) ([]byte, error) {
	return rpcEnvelope(s, "result", streamResponse(res)), nil
}

func (jsonrpc10) failure(s *send, f *failure) (int, []byte, bool) {
	return rpcFailure(s, f, true)
}

// rpcFailure frames f as a JSON-RPC error answering s, with a google.rpc.ErrorInfo in
// its data when withInfo is set. It returns the HTTP status, the body, and whether
// the body is one Server-Sent Event.
func rpcFailure(s *send, f *failure, withInfo bool) (int, []byte, bool) {
	status := http.StatusOK
	var errObj []byte
	if f.kind == failRelayed {
		errObj = f.raw
	} else {
		var code int
		switch f.kind {
		case failInvalidParams:
			code = codeInvalidParams
		case failUnsupported:
			code = codeUnsupported
		case failTaskNotFound:
			code = codeTaskNotFound
		case failInternal, failUnreplayable:
			code = codeInternalError
		case failUnavailable:
			code, status = codeServerError, http.StatusServiceUnavailable
		case failExhausted:
			code, status = codeServerError, http.StatusTooManyRequests
		case failInFlight:
			code, status = codeServerError, http.StatusConflict
		case failTooLarge:
			code, status = codeInvalidRequest, http.StatusRequestEntityTooLarge
		case failNotServed:
			code, status = codeInvalidRequest, f.status
		case failUnknown:
			code, status = codeInternalError, http.StatusBadGateway
		default: // failUnreadable
			code, status = codeInvalidRequest, http.StatusBadRequest
		}
		e := rpcError{Code: code, Message: f.message}
		if withInfo {
			e.Data = errorInfos(f)
		}
		errObj, _ = json.Marshal(e)
	}
	// An error to a streaming request is one SSE event, or the a2a-go client drops
	// it; an error with its own HTTP status is a plain body, which the client reports
	// by the status.
	streaming := s != nil && s.streaming && status == http.StatusOK
	return status, rpcEnvelope(s, "error", errObj), streaming
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Data    []errorInfo `json:"data,omitempty"`
}

// rpcEnvelope returns a JSON-RPC response to s carrying value (raw JSON) under member.
func rpcEnvelope(s *send, member string, value []byte) []byte {
	id := []byte("null")
	if s != nil && s.id != nil {
		id = s.id
	}
	var buf bytes.Buffer
	buf.Grow(len(value) + len(id) + 40)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"` + member + `":`)
	buf.Write(value)
	buf.WriteString("}\n")
	return buf.Bytes()
}

func (jsonrpc10) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	params := struct {
		Tenant        string `json:"tenant,omitempty"`
		ID            string `json:"id"`
		HistoryLength *int   `json:"historyLength,omitempty"`
	}{s.tenant, taskID, s.historyLength}
	return rpcCall(r, s, methodGetTask, params, "application/json")
}

func (jsonrpc10) taskAnswer(status int, body []byte) ([]byte, *failure) {
	return rpcTaskAnswer(status, body)
}

// rpcTaskAnswer reads a JSON-RPC answer to a task read: its result, or the failure
// to pass on.
func rpcTaskAnswer(status int, body []byte) ([]byte, *failure) {
	if status != http.StatusOK {
		return nil, taskUnreadable(status)
	}
	resp, ok := readRPCResponse(body)
	if !ok {
		return nil, taskUnreadable(status)
	}
	if !isNull(resp.Error) {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(resp.Error, &e)
		return nil, &failure{kind: failRelayed, status: http.StatusOK, raw: bytes.Clone(resp.Error), taskNotFound: e.Code == codeTaskNotFound}
	}
	if isNull(resp.Result) {
		return nil, taskMissing()
	}
	return bytes.Clone(resp.Result), nil
}

func (jsonrpc10) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	params := struct {
		Tenant string `json:"tenant,omitempty"`
		ID     string `json:"id"`
	}{s.tenant, taskID}
	return rpcCall(r, s, methodSubscribeToTask, params, "text/event-stream")
}

// rpcCall returns a JSON-RPC call of method with params to the URL of r, carrying r's
// headers and s's id.
func rpcCall(r *http.Request, s *send, method string, params any, accept string) *http.Request {
	p, _ := json.Marshal(params)
	body := bytes.NewBufferString(`{"jsonrpc":"2.0","id":`)
	body.Write(s.id)
	body.WriteString(`,"method":"` + method + `","params":`)
	body.Write(p)
	body.WriteString("}")
	return derivedRequest(r, http.MethodPost, *r.URL, body.Bytes(), accept)
}
