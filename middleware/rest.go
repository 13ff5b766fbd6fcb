package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2akit/idempotency/middleware/internal/member"
	"github.com/a2akit/idempotency/middleware/internal/v1json"
)

// rest10 is the HTTP+JSON binding of A2A v1.0, as a2a-go's a2asrv.NewRESTHandler
// and NewTenantRESTHandler serve it: POST {prefix}/message:send and
// {prefix}/message:stream, where the prefix is the mount point and the tenant
// segment, if any.
type rest10 struct{}

const (
	restSendSuffix   = "/message:send"
	restStreamSuffix = "/message:stream"
)

func (rest10) framing() ProtocolBinding { return BindingHTTPJSON }
func (rest10) version() ProtocolVersion { return Version10 }

// restSend splits the path of an HTTP+JSON send into the prefix before
// /message:send or /message:stream, and reports whether it is a stream; ok is false
// for any other path. r.URL.Path is already unescaped, so a colon sent as %3A matches
// too.
func restSend(r *http.Request) (prefix string, streaming, ok bool) {
	if p, ok := strings.CutSuffix(r.URL.Path, restStreamSuffix); ok {
		return p, true, true
	}
	p, ok := strings.CutSuffix(r.URL.Path, restSendSuffix)
	return p, false, ok
}

// readSend reads body as a send at prefix, as a2asrv decodes it (a json.Decoder, so
// bytes after the first value are ignored), and reports whether it decodes; a2asrv
// answers a parse error without running anything.
func (b rest10) readSend(prefix string, streaming bool, body []byte) (*send, bool) {
	var p sendParams
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return nil, false
	}
	s := &send{d: b, prefix: prefix, streaming: streaming}
	p.fill(s)
	return s, true
}

// restError is a google.rpc.Status error body (AIP-193).
type restError struct {
	Error restStatus `json:"error"`
}

type restStatus struct {
	Code    int         `json:"code"`
	Status  string      `json:"status"`
	Message string      `json:"message"`
	Details []errorInfo `json:"details,omitempty"`
}

func (rest10) sendAnswer(status int, body []byte) Produced {
	if status < 200 || status > 299 {
		return restErrorAnswer(status, body)
	}
	return streamResponseAnswer(body)
}

// restErrorAnswer reads an HTTP+JSON error answer to a forwarded send, of either
// version: a definite refusal when its status says nothing serves the route, or when
// it is a google.rpc.Status body with a status that refuses (see ruleOf).
func restErrorAnswer(status int, body []byte) Produced {
	var e restError
	shaped := json.Unmarshal(body, &e) == nil && e.Error.Code != 0
	return Produced{Refused: statusRefuses(status) || shaped && shapedStatusRefuses(status)}
}

func (rest10) eventAnswer(data []byte) Produced {
	if f := eventError(data); f != nil {
		return Produced{Refused: f.refuses, fail: f}
	}
	return streamResponseAnswer(data)
}

func (rest10) eventTask(data []byte) ([]byte, bool) { return streamResponseTask(data) }

// eventError returns the error an HTTP+JSON event carries ({"error": google.rpc.Status},
// with the HTTP status in its code) as a failure to relay, or nil.
func eventError(data []byte) *failure {
	if !member.MayHave(data, "error") { // most events: no decode needed to know
		return nil
	}
	var e struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error == nil {
		return nil
	}
	status := e.Error.Code
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	return &failure{kind: failRelayed, status: status, raw: data, refuses: shapedStatusRefuses(status)}
}

func (rest10) product(_ *send, res product) ([]byte, error) {
	return append(streamResponse(res), '\n'), nil
}

func (rest10) failure(_ *send, f *failure) (int, []byte, bool) { return restFailure(f) }

// restFailure answers with the HTTP status and a google.rpc.Status body, on
// message:stream too: a2a-go's clients (v1.0, and v0.3 in a2acompat/a2av0) read any
// answer but 200 as an error, typed by the ErrorInfo reason, before they look for
// events. The body is sent as application/json, the only type those clients read.
func restFailure(f *failure) (int, []byte, bool) {
	if f.kind == failRelayed {
		return f.status, f.raw, false
	}
	var status int
	var code string
	switch f.kind {
	case failInvalidParams:
		status, code = http.StatusBadRequest, "INVALID_ARGUMENT"
	case failUnsupported:
		status, code = http.StatusBadRequest, "UNIMPLEMENTED"
	case failTaskNotFound:
		status, code = http.StatusNotFound, "NOT_FOUND"
	case failInternal:
		status, code = http.StatusInternalServerError, "INTERNAL"
	case failUnavailable:
		status, code = http.StatusServiceUnavailable, "UNAVAILABLE"
	case failExhausted:
		status, code = http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	case failInFlight:
		status, code = http.StatusConflict, "UNAVAILABLE"
	case failTooLarge:
		status, code = http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT"
	case failUnreplayable:
		status, code = http.StatusInternalServerError, "DATA_LOSS"
	case failNotServed:
		status, code = f.status, "NOT_FOUND"
	case failUnknown:
		status, code = http.StatusBadGateway, "UNAVAILABLE"
	default: // failUnreadable
		status, code = http.StatusBadRequest, "INVALID_ARGUMENT"
	}
	body, _ := json.Marshal(restError{restStatus{Code: status, Status: code, Message: f.message,
		Details: errorInfos(f)}})
	return status, append(body, '\n'), false
}

func (rest10) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	return restTaskRequest(r, s, taskID)
}

// restTaskRequest returns the GET {prefix}/tasks/{id}?historyLength=n of both
// versions' HTTP+JSON bindings.
func restTaskRequest(r *http.Request, s *send, taskID string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+"/tasks/"+taskID, ""
	u.RawQuery = ""
	if s.historyLength != nil {
		u.RawQuery = "historyLength=" + strconv.Itoa(*s.historyLength)
	}
	return derivedRequest(r, http.MethodGet, u, nil, "application/json")
}

func (rest10) taskAnswer(status int, body []byte) ([]byte, *failure) {
	return restTaskAnswer(status, body)
}

// restTaskAnswer reads an HTTP+JSON answer to a task read: the bare Task, or the
// failure to pass on.
func restTaskAnswer(status int, body []byte) ([]byte, *failure) {
	if status == http.StatusOK {
		if !v1json.IsObject(body) {
			return nil, taskMissing()
		}
		return bytes.TrimSpace(body), nil
	}
	var e restError
	if json.Unmarshal(body, &e) != nil || e.Error.Code == 0 {
		// Not an A2A error: most likely the route is not served at this prefix.
		return nil, taskUnreadable(status)
	}
	return nil, &failure{kind: failRelayed, status: status, raw: body, taskNotFound: status == http.StatusNotFound}
}

func (rest10) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+"/tasks/"+taskID+":subscribe", ""
	u.RawQuery = ""
	return derivedRequest(r, http.MethodPost, u, nil, "text/event-stream")
}
