package middleware

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/a2akit/idempotency/middleware/internal/member"
)

// Wire pieces shared by the bindings.

// defaultRetryAfter is the Retry-After of a 503: index failures are expected to be
// brief, and a retry costs the client one round trip.
const defaultRetryAfter = time.Second

// fullRetryAfter is the Retry-After of a 429 for a full index: keys leave it only as
// their time to live (24 hours by default) ends, so a retry within seconds cannot
// succeed, and clients that honour Retry-After (keyedclient gives up on one this
// long) do not hammer a full scope.
const fullRetryAfter = time.Hour

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

// taskUnreadable is the failure of a task read whose answer the binding could not
// read; why says what was wrong with it (a status, never an error's text). A 4xx
// that is not the binding's own error means that nothing serves the task read at
// the retry's path: a client error, which no retry at that path can mend.
func taskUnreadable(status int) *failure {
	if status >= 400 && status < 500 && status != 408 && status != 429 {
		return &failure{kind: failNotServed, status: status, message: "nothing at this path serves the task of this " +
			"idempotency key (HTTP " + strconv.Itoa(status) + "): send the retry to the endpoint of the first attempt"}
	}
	return &failure{kind: failUnavailable, message: "the server's answer to reading the key's task could not be read (HTTP " +
		strconv.Itoa(status) + "); retry with the same key and message later", retryAfter: defaultRetryAfter}
}

// taskUnframable is the failure of a task read whose answer this binding's codec
// cannot convert (err says why, for the log only): no retry can mend it.
func taskUnframable(error) *failure {
	return &failure{kind: failInternal, message: msgUnanswerable}
}

// taskMissing is the failure of a task read that the server answered without a task.
func taskMissing() *failure {
	return &failure{kind: failUnavailable, message: "the server answered reading the key's task with no task; " +
		"retry with the same key and message later", retryAfter: defaultRetryAfter}
}

// retryAfterSeconds rounds d up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return int(max(1, math.Ceil(d.Seconds())))
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// streamMembers holds the members of a v1.0 SendMessageResponse or StreamResponse
// (and of their proto-JSON twins in v0.3's HTTP+JSON): an object with one of task,
// message, statusUpdate and artifactUpdate.
type streamMembers struct {
	Task           json.RawMessage `json:"task"`
	Message        json.RawMessage `json:"message"`
	StatusUpdate   json.RawMessage `json:"statusUpdate"`
	ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
}

// readStreamMembers reads raw, which need not be valid JSON, as a
// SendMessageResponse or StreamResponse, as json.Unmarshal into streamMembers reads
// it, with one scan to validate and one walk (member.Members) instead of nested
// decodes. The members are copies, as json.Unmarshal's are.
func readStreamMembers(raw json.RawMessage) (streamMembers, bool) {
	if !json.Valid(raw) {
		return streamMembers{}, false
	}
	v, ok := readValidStreamMembers(raw)
	if !ok {
		return streamMembers{}, false
	}
	for _, m := range []*json.RawMessage{&v.Task, &v.Message, &v.StatusUpdate, &v.ArtifactUpdate} {
		*m = bytes.Clone(*m)
	}
	return v, true
}

// readValidStreamMembers is readStreamMembers of raw known to be valid JSON (a value
// read out of a validated answer), without the copies: the members alias raw.
func readValidStreamMembers(raw json.RawMessage) (streamMembers, bool) {
	o, ok := member.Members(raw)
	if !ok {
		return streamMembers{}, false
	}
	var v streamMembers
	for name, value, ok := o.Next(); ok; name, value, ok = o.Next() {
		// As encoding/json: the last member of a name wins, null included.
		switch {
		case member.NameIs(name, "task"):
			v.Task = value
		case member.NameIs(name, "message"):
			v.Message = value
		case member.NameIs(name, "statusUpdate"):
			v.StatusUpdate = value
		case member.NameIs(name, "artifactUpdate"):
			v.ArtifactUpdate = value
		}
	}
	return v, true
}

// validStreamResponseAnswer is streamResponseAnswer of raw known to be valid JSON;
// what it returns does not alias raw.
func validStreamResponseAnswer(raw json.RawMessage) Produced {
	v, ok := readValidStreamMembers(raw)
	if !ok {
		return Produced{}
	}
	p := v.answer()
	p.Reply = bytes.Clone(p.Reply)
	return p
}

// validStreamResponseTask is streamResponseTask of raw known to be valid JSON; the
// task is a copy.
func validStreamResponseTask(raw json.RawMessage) ([]byte, bool) {
	v, ok := readValidStreamMembers(raw)
	if !ok {
		return nil, false
	}
	task, ok := v.task()
	return bytes.Clone(task), ok
}

// answer returns what the members carry. The message is passed on as it is: a
// binding of another version converts it.
func (v streamMembers) answer() Produced {
	switch {
	case !isNull(v.Task):
		if id := objectID(v.Task, "id"); id != "" {
			return Produced{TaskID: id}
		}
	case !isNull(v.Message):
		if v.Message[0] == '{' {
			return Produced{Reply: v.Message}
		}
	case !isNull(v.StatusUpdate):
		if id := objectID(v.StatusUpdate, "taskId"); id != "" {
			return Produced{TaskID: id, update: true}
		}
	case !isNull(v.ArtifactUpdate):
		if id := objectID(v.ArtifactUpdate, "taskId"); id != "" {
			return Produced{TaskID: id, update: true}
		}
	}
	return Produced{}
}

// task returns the task the members carry, or false.
func (v streamMembers) task() ([]byte, bool) {
	if isNull(v.Task) || objectID(v.Task, "id") == "" {
		return nil, false
	}
	return v.Task, true
}

// objectID returns the string member name ("id" or "taskId") of raw, valid JSON, as
// json.Unmarshal into a struct with that one string field reads it: "" when raw is
// not an object, or when a member of that name is neither a string nor null (a type
// error); else the last string (null leaves the field as it was).
func objectID(raw json.RawMessage, name string) string {
	o, ok := member.Members(raw)
	if !ok {
		return ""
	}
	id := ""
	for n, value, ok := o.Next(); ok; n, value, ok = o.Next() {
		if !member.NameIs(n, name) || isNull(value) {
			continue
		}
		s, ok := member.String(value)
		if !ok {
			return ""
		}
		id = s
	}
	return id
}

// streamResponseAnswer reads a v1.0 SendMessageResponse or StreamResponse.
func streamResponseAnswer(raw json.RawMessage) Produced {
	if !json.Valid(raw) {
		return Produced{}
	}
	return validStreamResponseAnswer(raw)
}

// streamResponseTask returns the task of a v1.0 SendMessageResponse or
// StreamResponse, or false.
func streamResponseTask(raw json.RawMessage) ([]byte, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	return validStreamResponseTask(raw)
}

// streamResponse returns the v1.0 SendMessageResponse (or StreamResponse) carrying res.
func streamResponse(res product) []byte {
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
// does: nil or negative n keeps it whole, 0 drops it. Every other byte of the task
// stays as the server wrote it (member order, spacing, members the kit does not
// know, A2A v1.1's generation): only the history member's value is rewritten, or
// the member cut out.
func shapeHistory(task []byte, n *int) []byte {
	if n == nil || *n < 0 {
		return task
	}
	o, ok := member.Members(task)
	if !ok {
		return task
	}
	var name, value []byte
	count := 0
	for nm, v, ok := o.Next(); ok; nm, v, ok = o.Next() {
		if string(nm) == "history" {
			name, value, count = nm, v, count+1
		}
	}
	switch {
	case count == 0:
		return task
	case count > 1:
		return shapeHistoryMap(task, n) // the last wins, as encoding/json reads it
	}
	var history []json.RawMessage
	if json.Unmarshal(value, &history) != nil || *n > 0 && len(history) <= *n {
		return task
	}
	// name and value alias task: their offsets follow from their capacities.
	from, to := cap(task)-cap(name)-1, cap(task)-cap(value)+len(value) // the opening quote; the value's end
	if *n > 0 {
		trimmed, err := json.Marshal(history[len(history)-*n:])
		if err != nil {
			return task
		}
		from = cap(task) - cap(value)
		return slices.Concat(task[:from], trimmed, task[to:])
	}
	// Cut the member out with one of its commas: the one after it, or else the one
	// before it.
	if i := skipJSONSpace(task, to); i < len(task) && task[i] == ',' {
		to = i + 1
	} else if j := bytes.LastIndexByte(task[:from], ','); j >= 0 && len(bytes.TrimSpace(task[j+1:from])) == 0 {
		from = j
	}
	return slices.Concat(task[:from], task[to:])
}

// skipJSONSpace returns the index of the first byte of b at or after i that is no
// JSON white space.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// shapeHistoryMap is shapeHistory by a decode into a map and a new encoding, for a
// task that names its history more than once.
func shapeHistoryMap(task []byte, n *int) []byte {
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
