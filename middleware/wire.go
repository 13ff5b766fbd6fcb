package middleware

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Wire pieces shared by the A2A v1.0 bindings.

// defaultRetryAfter is the Retry-After of a 503: index failures are expected to be
// brief, and a retry costs the client one round trip.
const defaultRetryAfter = time.Second

// errorDomain is the ErrorInfo domain of A2A errors; a2a-go's clients map an
// HTTP+JSON error to a typed error only by a reason in this domain.
const errorDomain = "a2a-protocol.org"

// errorInfo is a google.rpc.ErrorInfo in ProtoJSON Any form.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// newErrorInfo returns the ErrorInfo for f with reason; a Retry-After delay is also
// given in the metadata, for clients that only see the body.
func newErrorInfo(reason string, f *failure) errorInfo {
	info := errorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: reason, Domain: errorDomain}
	if f.retryAfter > 0 {
		info.Metadata = map[string]string{"retryAfterSeconds": strconv.Itoa(retryAfterSeconds(f.retryAfter))}
	}
	return info
}

// retryAfterSeconds rounds d up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return int(max(1, math.Ceil(d.Seconds())))
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// streamResponseOutcome reads a v1.0 SendMessageResponse or StreamResponse: an
// object with one of task, message, statusUpdate and artifactUpdate.
func streamResponseOutcome(raw json.RawMessage) outcome {
	var v struct {
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
	}
	if isNull(raw) || json.Unmarshal(raw, &v) != nil {
		return outcome{}
	}
	switch {
	case !isNull(v.Task):
		var t struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(v.Task, &t) != nil || t.ID == "" {
			return outcome{}
		}
		return outcome{kind: outcomeTask, taskID: t.ID, task: v.Task}
	case !isNull(v.Message):
		if v.Message[0] != '{' {
			return outcome{}
		}
		return outcome{kind: outcomeMessage, message: v.Message}
	case !isNull(v.StatusUpdate), !isNull(v.ArtifactUpdate):
		update := v.StatusUpdate
		if isNull(update) {
			update = v.ArtifactUpdate
		}
		var u struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(update, &u) != nil || u.TaskID == "" {
			return outcome{}
		}
		return outcome{kind: outcomeUpdate, taskID: u.TaskID}
	}
	return outcome{}
}

// streamResponse returns the v1.0 SendMessageResponse (or StreamResponse) carrying res.
func streamResponse(res result) []byte {
	member, value := "task", res.task
	if res.message != nil {
		member, value = "message", res.message
	}
	var buf bytes.Buffer
	buf.Grow(len(value) + 12)
	buf.WriteString(`{"` + member + `":`)
	buf.Write(value)
	buf.WriteString("}")
	return buf.Bytes()
}

// shapeHistory trims a Task's history to its last n messages, as a2a-go's GetTask
// does: nil or negative n keeps it whole, 0 drops it.
func shapeHistory(task []byte, n *int) []byte {
	if n == nil || *n < 0 {
		return task
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(task, &fields) != nil {
		return task
	}
	raw, ok := fields["history"]
	if !ok {
		return task
	}
	if *n == 0 {
		delete(fields, "history")
	} else {
		var history []json.RawMessage
		if json.Unmarshal(raw, &history) != nil || len(history) <= *n {
			return task
		}
		fields["history"], _ = json.Marshal(history[len(history)-*n:])
	}
	shaped, err := json.Marshal(fields)
	if err != nil {
		return task
	}
	return shaped
}

// derivedRequest returns a request to the wrapped handler made on behalf of r: same
// context and headers (so the server's authentication applies to it), a new method,
// URL and body.
func derivedRequest(r *http.Request, method string, u url.URL, body []byte, accept string) *http.Request {
	d := r.Clone(r.Context())
	d.Method = method
	d.URL = &u
	d.RequestURI = u.RequestURI()
	d.TransferEncoding = nil
	d.Trailer = nil
	d.GetBody = nil
	d.Header.Del("Content-Length")
	d.Header.Del("Transfer-Encoding")
	d.Header.Set("Accept", accept)
	if body == nil {
		d.Body = http.NoBody
		d.ContentLength = 0
		d.Header.Del("Content-Type")
	} else {
		d.Body = readCloser(body)
		d.ContentLength = int64(len(body))
		d.Header.Set("Content-Type", "application/json")
	}
	return d
}
