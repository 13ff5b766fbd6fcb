package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
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
		var m map[string]json.RawMessage
		if id := objectID(v.Task, "id"); id != "" && json.Unmarshal(v.Task, &m) == nil {
			f.taskID, f.fields = id, m
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
	if json.Unmarshal(raw, &u) != nil || !f.of(u.updateHead) {
		return
	}
	var cur struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(f.fields["status"], &cur) == nil && !isNull(cur.Message) {
		var history []json.RawMessage
		_ = json.Unmarshal(f.fields["history"], &history)
		f.fields["history"], _ = json.Marshal(append(history, cur.Message))
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
	if json.Unmarshal(raw, &u) != nil || isNull(u.Artifact) || !f.of(u.updateHead) {
		return
	}
	type artifact struct {
		ID       string                     `json:"artifactId"`
		Parts    []json.RawMessage          `json:"parts"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	var in artifact
	var all []json.RawMessage
	if json.Unmarshal(u.Artifact, &in) != nil {
		return
	}
	_ = json.Unmarshal(f.fields["artifacts"], &all)
	i := -1
	for j, a := range all {
		var cur artifact
		if json.Unmarshal(a, &cur) == nil && cur.ID == in.ID {
			i = j
		}
	}
	switch {
	case i < 0:
		all = append(all, u.Artifact)
	case !u.Append:
		all[i] = u.Artifact
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
	f.fields["artifacts"], _ = json.Marshal(all)
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
