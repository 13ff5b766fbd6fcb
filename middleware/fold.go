package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/a2akit/idempotency/middleware/internal/member"
)

// earlyWriter is the ResponseWriter of a send forwarded in its streaming form (early
// bind). It answers no one: it settles the send at the stream's first event and
// folds every event into the task, so that the client's unary answer is the task
// the stream made; an answer that is not a stream is kept for forwardEarly.
type earlyWriter struct {
	header http.Header
	st     *settler
	d      streamingDialect
	status int
	stream bool
	// body is an answer that is not a stream, up to maxAnswerCopy.
	body     bytes.Buffer
	overflow bool

	held      []byte
	scan      eventScanner
	dropping  bool     // an event too large to read: the rest is dropped
	first     bool     // the first event was read
	firstFail *failure // the error the stream began with
	fold      taskFold
}

func (ew *earlyWriter) Header() http.Header { return ew.header }

func (ew *earlyWriter) WriteHeader(code int) {
	if ew.status != 0 || code < 200 {
		return
	}
	ew.status = code
	ew.st.status = code
	ew.stream = code == http.StatusOK && isEventStream(ew.header)
}

func (ew *earlyWriter) Write(p []byte) (int, error) {
	if ew.status == 0 {
		ew.WriteHeader(http.StatusOK)
	}
	switch {
	case !ew.stream:
		if ew.overflow || ew.body.Len()+len(p) > maxAnswerCopy {
			ew.overflow, ew.body = true, bytes.Buffer{}
		} else {
			ew.body.Write(p)
		}
		return len(p), nil
	case ew.dropping:
		return len(p), nil
	}
	ew.held = append(ew.held, p...)
	for {
		data, end, ok := ew.scan.scan(ew.held, false)
		if !ok {
			break
		}
		ew.event(data)
		ew.held = append(ew.held[:0], ew.held[end:]...)
		ew.scan = eventScanner{}
	}
	if len(ew.held) > maxEventBytes {
		// An event too large to read: the send ran, and the task cannot be folded.
		if !ew.first {
			ew.first = true
			ew.st.settle(Produced{PastBound: true})
		}
		ew.fold.tooBig, ew.dropping, ew.held = true, true, nil
	}
	return len(p), nil
}

// event reads one event: the first settles the send; every one is folded.
func (ew *earlyWriter) event(data []byte) {
	if !ew.first {
		ew.first = true
		p := ew.d.eventAnswer(data)
		ew.firstFail = p.fail
		ew.st.settle(p)
	}
	if v, f := ew.d.eventMembers(data); f == nil {
		ew.fold.add(v, len(data))
	}
}

// Flush does nothing: the answer is written when the stream ends.
func (ew *earlyWriter) Flush() {}

// taskFold is a task as the events of its stream make it, folded as a2a-go's task
// manager folds them into the stored task: a Task event is the task; a status update
// moves the current status's message to the history, merges its metadata and
// replaces the status; an artifact update adds the artifact, replaces the one of the
// same artifactId, or (append) adds its parts to that one. A Message event is the
// agent's reply. Members are v1.0 JSON, kept as they came.
type taskFold struct {
	taskID string
	fields map[string]json.RawMessage // nil before a Task or an update
	reply  []byte
	size   int  // bytes folded
	tooBig bool // past maxAnswerCopy, or an event too large: not folded further
}

// whole reports whether the fold holds the whole task.
func (f *taskFold) whole() bool { return f.fields != nil && !f.tooBig }

// task returns the folded task as JSON.
func (f *taskFold) task() []byte {
	b, _ := json.Marshal(f.fields)
	return b
}

// add folds the members of one event of size bytes.
func (f *taskFold) add(v streamMembers, size int) {
	if f.size += size; f.size > maxAnswerCopy {
		f.tooBig = true
	}
	switch {
	case f.tooBig:
	case !isNull(v.Task):
		if id := objectID(v.Task, "id"); id != "" {
			if m, ok := objectMap(v.Task); ok {
				f.taskID, f.fields = id, m
			}
		}
	case !isNull(v.Message):
		f.reply = v.Message
	case !isNull(v.StatusUpdate):
		f.statusUpdate(v.StatusUpdate)
	case !isNull(v.ArtifactUpdate):
		f.artifactUpdate(v.ArtifactUpdate)
	}
}

// updateHead is what status and artifact updates share.
type updateHead struct {
	TaskID    string                     `json:"taskId"`
	ContextID json.RawMessage            `json:"contextId"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
}

// of returns whether u updates the folded task, starting the task from u when none
// is known yet.
func (f *taskFold) of(u updateHead) bool {
	if u.TaskID == "" {
		return false
	}
	if f.fields == nil {
		f.taskID = u.TaskID
		f.fields = map[string]json.RawMessage{"id": json.RawMessage(strconv.Quote(u.TaskID))}
		if !isNull(u.ContextID) {
			f.fields["contextId"] = u.ContextID
		}
	}
	return u.TaskID == f.taskID
}

func (f *taskFold) statusUpdate(raw json.RawMessage) {
	var u struct {
		updateHead
		Status json.RawMessage `json:"status"`
	}
	if v, ok := plainMembers(raw, "taskId", "contextId", "metadata", "status"); ok && u.updateHead.read(v) {
		u.Status = v[3]
	} else if u.updateHead = (updateHead{}); json.Unmarshal(raw, &u) != nil {
		return
	}
	if !f.of(u.updateHead) {
		return
	}
	if msg := statusMessage(f.fields["status"]); !isNull(msg) {
		f.fields["history"] = appendElement(f.fields["history"], msg)
	}
	if len(u.Metadata) > 0 {
		f.fields["metadata"] = mergeMembers(f.fields["metadata"], u.Metadata)
	}
	if !isNull(u.Status) {
		f.fields["status"] = u.Status
	}
}

func (f *taskFold) artifactUpdate(raw json.RawMessage) {
	var u struct {
		updateHead
		Append   bool            `json:"append"`
		Artifact json.RawMessage `json:"artifact"`
	}
	fast := false
	if v, ok := plainMembers(raw, "taskId", "contextId", "metadata", "append", "artifact"); ok && u.updateHead.read(v) {
		u.Artifact = v[4]
		switch string(v[3]) {
		case "", "null", "false":
			fast = true
		case "true":
			fast, u.Append = true, true
		}
	}
	if !fast {
		u.updateHead, u.Artifact = updateHead{}, nil
		if json.Unmarshal(raw, &u) != nil {
			return
		}
	}
	if isNull(u.Artifact) || !f.of(u.updateHead) {
		return
	}
	if isNull(f.fields["artifacts"]) && plainArtifact(u.Artifact) {
		// The first artifact of the task (the common case): nothing to match.
		f.fields["artifacts"] = appendElement(nil, u.Artifact)
		return
	}
	mergeArtifact(f.fields, u.Artifact, u.Append)
}

// mergeArtifact folds the artifact a of an update into the task's members fields as
// a2a-go does: a new artifact id is added, a known one replaced, or, when add is
// set, given a's parts after its own and a's metadata over its own.
func mergeArtifact(fields map[string]json.RawMessage, a json.RawMessage, add bool) {
	type artifact struct {
		ID       string                     `json:"artifactId"`
		Parts    []json.RawMessage          `json:"parts"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	var in artifact
	var all []json.RawMessage
	if json.Unmarshal(a, &in) != nil {
		return
	}
	_ = json.Unmarshal(fields["artifacts"], &all)
	i := -1
	for j, a := range all {
		var cur artifact
		if json.Unmarshal(a, &cur) == nil && cur.ID == in.ID {
			i = j
		}
	}
	switch {
	case i < 0:
		all = append(all, a)
	case !add:
		all[i] = a
	default:
		var fields map[string]json.RawMessage
		var cur artifact
		if json.Unmarshal(all[i], &fields) != nil || json.Unmarshal(all[i], &cur) != nil {
			return
		}
		fields["parts"], _ = json.Marshal(append(cur.Parts, in.Parts...))
		if len(in.Metadata) > 0 {
			fields["metadata"] = mergeMembers(fields["metadata"], in.Metadata)
		}
		all[i], _ = json.Marshal(fields)
	}
	fields["artifacts"], _ = json.Marshal(all)
}

// mergeMembers returns the JSON object obj with the members of add set in it.
func mergeMembers(obj json.RawMessage, add map[string]json.RawMessage) json.RawMessage {
	m := map[string]json.RawMessage{}
	_ = json.Unmarshal(obj, &m)
	for k, v := range add {
		m[k] = v
	}
	out, _ := json.Marshal(m)
	return out
}

// The fold reads members with one walk (member.Members) where encoding/json's
// reading is plain, and with encoding/json where it is not; FuzzFold checks the
// fold against one made by encoding/json alone.

// plainMembers returns the values of the members of raw, valid JSON, that
// encoding/json decodes into struct fields named names (at most 5), when that
// reading is plain: raw is an object whose member names are ASCII without escapes,
// and each field's name is written exactly, by one member at most. Otherwise it
// returns false, and the caller decodes raw with encoding/json.
func plainMembers(raw []byte, names ...string) (v [5]json.RawMessage, ok bool) {
	o, ok := member.Members(raw)
	if !ok {
		return v, false
	}
	for name, value, more := o.Next(); more; name, value, more = o.Next() {
		if !member.Plain(name) {
			return v, false
		}
		for i, n := range names {
			if len(name) != len(n) || !bytes.EqualFold(name, []byte(n)) {
				continue
			}
			if string(name) != n || v[i] != nil {
				return v, false // a name matched by case folding, or twice
			}
			v[i] = value
		}
	}
	return v, true
}

// read sets h from the values of its members taskId, contextId and metadata (v[0:3],
// nil when absent), as json.Unmarshal does when they have the types it decodes
// without error, or reports false.
func (h *updateHead) read(v [5]json.RawMessage) bool {
	var out updateHead
	switch {
	case isNull(v[0]):
	case v[0][0] == '"':
		out.TaskID, _ = member.String(v[0])
	default:
		return false
	}
	out.ContextID = v[1]
	switch {
	case isNull(v[2]):
	case v[2][0] == '{':
		m, ok := objectMap(v[2])
		if !ok {
			return false
		}
		out.Metadata = m
	default:
		return false
	}
	*h = out
	return true
}

// objectMap returns the members of the JSON object raw, valid JSON, as json.Unmarshal
// into a map[string]json.RawMessage returns them (the last of a name wins), the
// values aliasing raw, or false when raw is not an object.
func objectMap(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	o, ok := member.Members(raw)
	if !ok {
		return nil, false
	}
	m := make(map[string]json.RawMessage, 8)
	for name, value, more := o.Next(); more; name, value, more = o.Next() {
		key := string(name)
		if !member.Plain(name) {
			var ok bool
			if key, ok = member.String(append(append([]byte{'"'}, name...), '"')); !ok {
				return nil, false
			}
		}
		m[key] = value
	}
	return m, true
}

// statusMessage returns the message of a task status, as json.Unmarshal reads it.
func statusMessage(status json.RawMessage) json.RawMessage {
	if v, ok := plainMembers(status, "message"); ok {
		return v[0]
	}
	var cur struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(status, &cur) != nil {
		return nil
	}
	return cur.Message
}

// appendElement returns the JSON array arr with v added at its end; when arr is not
// an array, the array of v alone (what json.Unmarshal into a slice and json.Marshal
// of the longer slice make, but for white space: task compacts it).
func appendElement(arr, v json.RawMessage) json.RawMessage {
	out := make([]byte, 0, len(arr)+len(v)+2)
	out = append(out, '[')
	if t := bytes.TrimSpace(arr); len(t) >= 2 && t[0] == '[' {
		if inner := bytes.TrimSpace(t[1 : len(t)-1]); len(inner) > 0 {
			out = append(append(out, inner...), ',')
		}
	}
	return append(append(out, v...), ']')
}

// plainArtifact reports whether raw, valid JSON, is an artifact object that
// json.Unmarshal reads without error and plainly: artifactId a string, parts an array,
// metadata an object (each may be absent or null).
func plainArtifact(raw json.RawMessage) bool {
	v, ok := plainMembers(raw, "artifactId", "parts", "metadata")
	return ok && (isNull(v[0]) || v[0][0] == '"') && (isNull(v[1]) || v[1][0] == '[') && (isNull(v[2]) || v[2][0] == '{')
}
