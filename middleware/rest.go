package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// restBinding is the HTTP+JSON binding of A2A v1.0, as a2a-go's a2asrv.NewRESTHandler
// and NewTenantRESTHandler serve it: POST {prefix}/message:send and
// {prefix}/message:stream, where the prefix is the mount point and the tenant
// segment, if any.
type restBinding struct{}

const (
	restSendSuffix   = "/message:send"
	restStreamSuffix = "/message:stream"
)

func (restBinding) name() string    { return "HTTP+JSON" }
func (restBinding) version() string { return version10 }

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

// owns reports whether r is an HTTP+JSON send.
func (restBinding) owns(r *http.Request) bool {
	_, _, ok := restSend(r)
	return ok
}

func (b restBinding) readSend(r *http.Request, body []byte) (*send, bool) {
	s := &send{b: b}
	s.prefix, s.streaming, _ = restSend(r)
	// a2asrv decodes the body with a json.Decoder, as here, and answers a parse error
	// without running anything when that fails.
	var p sendParams
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return nil, false
	}
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

func (restBinding) sendOutcome(status int, body []byte) outcome {
	if status < 200 || status > 299 {
		return outcome{kind: outcomeFailed}
	}
	return streamResponseOutcome(body)
}

func (restBinding) eventOutcome(data []byte) outcome {
	if f := eventError(data); f != nil {
		return outcome{kind: outcomeFailed, fail: f}
	}
	return streamResponseOutcome(data)
}

func (restBinding) eventTask(data []byte) ([]byte, bool) { return streamResponseTask(data) }

// eventError returns the error an HTTP+JSON event carries ({"error": google.rpc.Status},
// with the HTTP status in its code) as a failure to relay, or nil.
func eventError(data []byte) *failure {
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
	return &failure{kind: failRelayed, status: status, raw: data}
}

func (restBinding) result(_ *send, res result) ([]byte, error) {
	return append(streamResponse(res), '\n'), nil
}

func (restBinding) failure(_ *send, f *failure) (int, []byte, bool) { return restFailure(f) }

func (restBinding) extensionHeaders() []string { return extensionHeaders10 }

// restFailure answers with the HTTP status and a google.rpc.Status body, on
// message:stream too: a2a-go's clients (v1.0, and v0.3 in a2acompat/a2av0) read any
// answer but 200 as an error, typed by the ErrorInfo reason, before they look for
// events. The body is sent as application/json, the only type those clients read.
func restFailure(f *failure) (int, []byte, bool) {
	if f.kind == failRelayed {
		return f.status, f.raw, false
	}
	var status int
	var code, reason string
	switch f.kind {
	case failInvalidParams:
		status, code, reason = http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"
	case failUnsupported:
		status, code, reason = http.StatusBadRequest, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"
	case failTaskNotFound:
		status, code, reason = http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"
	case failInternal:
		status, code, reason = http.StatusInternalServerError, "INTERNAL", "INTERNAL_ERROR"
	case failUnavailable:
		status, code, reason = http.StatusServiceUnavailable, "UNAVAILABLE", "SERVER_ERROR"
	case failInFlight:
		status, code, reason = http.StatusConflict, "ABORTED", "SERVER_ERROR"
	case failTooLarge:
		status, code, reason = http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", "INVALID_REQUEST"
	default: // failUnreadable
		status, code, reason = http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_REQUEST"
	}
	body, _ := json.Marshal(restError{restStatus{Code: status, Status: code, Message: f.message,
		Details: []errorInfo{newErrorInfo(reason, f)}}})
	return status, append(body, '\n'), false
}

func (restBinding) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+"/tasks/"+taskID, ""
	u.RawQuery = ""
	if s.historyLength != nil {
		u.RawQuery = "historyLength=" + strconv.Itoa(*s.historyLength)
	}
	return derivedRequest(r, http.MethodGet, u, nil, "application/json")
}

func (restBinding) taskAnswer(status int, body []byte) ([]byte, *failure) {
	return restTaskAnswer(status, body)
}

// restTaskAnswer reads an HTTP+JSON answer to a task read: the bare Task, or the
// failure to pass on.
func restTaskAnswer(status int, body []byte) ([]byte, *failure) {
	if status == http.StatusOK {
		if !isJSONObject(body) {
			return nil, taskMissing()
		}
		return bytes.TrimSpace(body), nil
	}
	var e restError
	if json.Unmarshal(body, &e) != nil || e.Error.Code == 0 {
		// Not an A2A error: most likely the route is not served at this prefix.
		return nil, taskUnreadable("HTTP " + strconv.Itoa(status))
	}
	return nil, &failure{kind: failRelayed, status: status, raw: body, taskNotFound: status == http.StatusNotFound}
}

func (restBinding) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+"/tasks/"+taskID+":subscribe", ""
	u.RawQuery = ""
	return derivedRequest(r, http.MethodPost, u, nil, "text/event-stream")
}
