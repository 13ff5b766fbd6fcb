package servercheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// kind is what an answer, or one event of a stream, carried.
type kind int

const (
	kindNone    kind = iota // nothing the checker recognises
	kindTask                // a task
	kindMessage             // a Message reply
	kindUpdate              // a status or artifact update of a task
	kindError               // a JSON-RPC error, or an HTTP+JSON error body
)

func (k kind) String() string {
	return [...]string{"nothing recognisable", "a task", "a Message", "a task update", "an error"}[k]
}

// outcome is what one unary answer or one event carried.
type outcome struct {
	kind kind
	// taskID and state: of a task or an update (state normalised: "completed",
	// "working", ...).
	taskID, state string
	// messageID and text: of a Message reply.
	messageID, text string
	// code (JSON-RPC code, or the HTTP+JSON body's code), status (google.rpc.Status
	// status), reason (ErrorInfo reason) and message: of an error.
	code               int
	grpcStatus, reason string
	message            string
	rpcID              string // the JSON-RPC response's id, as JSON text
	hasRPCEnvelope     bool
	unrecognisedRaw    string
}

// answer is what came back for a send.
type answer struct {
	outcome // the unary answer, or the first event of a stream
	ex      *Exchange
	err     error // a transport failure: no HTTP answer
	status  int
	header  http.Header
	sse     bool
	events  []outcome // a stream's events, the first included
	body    []byte
	reqID   string // the JSON-RPC request's id, as JSON text
	elapsed time.Duration
}

// last returns the last event of a stream (or the unary outcome).
func (a *answer) last() outcome {
	if len(a.events) > 0 {
		return a.events[len(a.events)-1]
	}
	return a.outcome
}

// describe says in a few words what came back.
func (a *answer) describe() string {
	switch {
	case a.err != nil:
		return "no answer (" + a.err.Error() + ")"
	case a.kind == kindTask:
		return fmt.Sprintf("task %s (%s)", a.taskID, a.state)
	case a.kind == kindMessage:
		return "Message " + a.messageID
	case a.kind == kindError:
		s := fmt.Sprintf("HTTP %d, error %d", a.status, a.code)
		if a.grpcStatus != "" {
			s += " " + a.grpcStatus
		}
		if a.reason != "" {
			s += " reason " + a.reason
		}
		return s + ": " + strconv.Quote(cut(a.message, 160))
	}
	return fmt.Sprintf("HTTP %d with %s", a.status, a.kind)
}

// readStream reads the events of an SSE answer.
func (a *answer) readStream(r io.Reader, binding string, onEvent func(outcome) bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBody)
	var data []string
	flush := func() bool {
		if len(data) == 0 {
			return true
		}
		o := classify([]byte(strings.Join(data, "\n")), binding, 200)
		data = data[:0]
		if len(a.events) == 0 {
			a.outcome = o
		}
		a.events = append(a.events, o)
		return onEvent == nil || onEvent(o)
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if !flush() {
				return
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	flush()
}

// classify reads a unary answer's body, or one event's data, in either version and
// binding.
func classify(body []byte, binding string, status int) outcome {
	var o outcome
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		o.unrecognisedRaw = cut(string(body), 200)
		return o
	}
	if binding == BindingJSONRPC {
		if _, ok := top["jsonrpc"]; ok {
			o.hasRPCEnvelope = true
			o.rpcID = string(top["id"])
		}
		if e, ok := top["error"]; ok {
			readRPCError(&o, e)
			return o
		}
		if r, ok := top["result"]; ok {
			readResult(&o, r)
			return o
		}
		o.unrecognisedRaw = cut(string(body), 200)
		return o
	}
	if e, ok := top["error"]; ok {
		readRESTError(&o, e)
		return o
	}
	if status >= 400 {
		// Another shape of error: RFC 7807 problem details, say.
		var p struct {
			Title, Detail string
			Status        int
		}
		json.Unmarshal(body, &p)
		o.kind, o.code, o.message = kindError, status, strings.TrimSpace(p.Title+": "+p.Detail)
		return o
	}
	readResult(&o, body)
	return o
}

func readRPCError(o *outcome, raw json.RawMessage) {
	var e struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	json.Unmarshal(raw, &e)
	o.kind, o.code, o.message = kindError, e.Code, e.Message
	o.reason = reasonOf(e.Data)
}

func readRESTError(o *outcome, raw json.RawMessage) {
	var e struct {
		Code    int             `json:"code"`
		Status  string          `json:"status"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"`
	}
	json.Unmarshal(raw, &e)
	o.kind, o.code, o.grpcStatus, o.message = kindError, e.Code, e.Status, e.Message
	o.reason = reasonOf(e.Details)
}

// reasonOf returns the reason of the first ErrorInfo in a list of details (or in one
// detail object).
func reasonOf(raw json.RawMessage) string {
	var list []struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(raw, &list) != nil {
		var one struct {
			Reason string `json:"reason"`
		}
		json.Unmarshal(raw, &one)
		return one.Reason
	}
	for _, d := range list {
		if d.Reason != "" {
			return d.Reason
		}
	}
	return ""
}

// wireTask holds what the checker reads of a task, a Message and an update, in v1.0
// and v0.3 shapes.
type wireObject struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	TaskID    string `json:"taskId"`
	MessageID string `json:"messageId"`
	Status    *struct {
		State string `json:"state"`
	} `json:"status"`
	Parts   []struct{ Text string } `json:"parts"`
	Content []struct{ Text string } `json:"content"`
}

// readResult reads a SendMessage result or stream event: {"task":…}, {"message":…}
// ({"msg":…} in v0.3's HTTP+JSON), {"statusUpdate":…}, {"artifactUpdate":…}, or an
// object with v0.3's "kind".
func readResult(o *outcome, raw json.RawMessage) {
	var wrapped map[string]json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		o.unrecognisedRaw = cut(string(raw), 200)
		return
	}
	var obj wireObject
	k := kindNone
	for name, v := range wrapped {
		switch strings.ToLower(name) {
		case "task":
			k = kindTask
		case "message", "msg":
			k = kindMessage
		case "statusupdate", "artifactupdate", "status_update", "artifact_update":
			k = kindUpdate
		default:
			continue
		}
		json.Unmarshal(v, &obj)
		break
	}
	if k == kindNone {
		json.Unmarshal(raw, &obj)
		switch {
		case obj.Kind == "task" || obj.Kind == "" && obj.ID != "" && obj.Status != nil:
			k = kindTask
		case obj.Kind == "message":
			k = kindMessage
		case obj.Kind == "status-update" || obj.Kind == "artifact-update":
			k = kindUpdate
		}
	}
	o.kind = k
	switch k {
	case kindTask:
		o.taskID = obj.ID
	case kindUpdate:
		o.taskID = obj.TaskID
	case kindMessage:
		o.messageID = obj.MessageID
		for _, p := range append(obj.Parts, obj.Content...) {
			o.text += p.Text
		}
	default:
		o.unrecognisedRaw = cut(string(raw), 200)
	}
	if obj.Status != nil {
		o.state = normState(obj.Status.State)
	}
}

// normState spells a task state as v0.3 does: TASK_STATE_INPUT_REQUIRED and
// input-required are both "input-required".
func normState(s string) string {
	s = strings.ToLower(strings.TrimPrefix(strings.ToUpper(s), "TASK_STATE_"))
	return strings.ReplaceAll(s, "_", "-")
}

// finalState reports whether a task in state s has stopped: terminal, or
// interrupted (waiting for input or authorisation).
func finalState(s string) bool {
	switch s {
	case "completed", "failed", "canceled", "cancelled", "rejected", "input-required", "auth-required":
		return true
	}
	return false
}
