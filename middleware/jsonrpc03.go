package middleware

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"
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

func (b jsonrpc03) sendCarry(status int, body []byte) carry {
	if status != http.StatusOK {
		return carry{kind: carryError}
	}
	return b.eventCarry(body)
}

func (jsonrpc03) eventCarry(data []byte) carry {
	result, fail := readResponse(data)
	if fail != nil {
		return carry{kind: carryError, fail: fail}
	}
	switch kindOf(result) {
	case "task":
		if id := objectID(result, "id"); id != "" {
			return carry{kind: carryTask, taskID: id}
		}
	case "message":
		if msg, err := convertJSON(result, kindMessageToV1); err == nil {
			return carry{kind: carryMessage, message: msg}
		}
	case "status-update", "artifact-update":
		if id := objectID(result, "taskId"); id != "" {
			return carry{kind: carryUpdate, taskID: id}
		}
	}
	return carry{}
}

func (jsonrpc03) eventTask(data []byte) ([]byte, bool) {
	result, fail := readResponse(data)
	if fail != nil || kindOf(result) != "task" {
		return nil, false
	}
	task, err := convertJSON(result, kindTaskToV1)
	return task, err == nil
}

// kindOf returns the kind member of a v0.3 object, or "".
func kindOf(raw json.RawMessage) string {
	var v struct {
		Kind string `json:"kind"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v.Kind
}

func (jsonrpc03) product(s *send, res product) ([]byte, error) {
	var v []byte
	var err error
	if res.message != nil {
		v, err = convertJSON(res.message, v1MessageToKind)
	} else {
		v, err = convertJSON(res.task, v1TaskToKind)
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
	task, err := convertJSON(raw, kindTaskToV1)
	if err != nil {
		return nil, taskUnreadable(err.Error())
	}
	return task, nil
}

func (jsonrpc03) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	params := struct {
		ID string `json:"id"`
	}{taskID}
	return rpcCall(r, s, method03Resubscribe, params, "text/event-stream")
}

// The types below mirror the objects of A2A v0.3's JSON-RPC binding as a2a-go v0.3.x
// marshals them (a2a.Task, a2a.Message, a2a.Artifact and the parts), which is also
// what a2acompat/a2av0 writes: v1.0's objects with a "kind" member on tasks, messages
// and parts, lower-case states and roles, and parts that are text, file or data.

// kindTag is the kind member of a v0.3 task or message: written, never read, as
// a2a-go v0.3.x's types have no field for it (a part's kind is read).
type kindTag string

// UnmarshalJSON ignores the member, whatever it holds.
func (*kindTag) UnmarshalJSON([]byte) error { return nil }

// kindTask mirrors a2a.Task of a2a-go v0.3.x.
type kindTask struct {
	Kind      kindTag         `json:"kind"`
	ID        string          `json:"id"`
	Artifacts []*kindArtifact `json:"artifacts,omitempty"`
	ContextID string          `json:"contextId"`
	History   []*kindMessage  `json:"history,omitempty"`
	Metadata  jsonObject      `json:"metadata,omitempty"`
	Status    kindStatus      `json:"status"`
}

// kindStatus mirrors a2a.TaskStatus of a2a-go v0.3.x.
type kindStatus struct {
	Message   *kindMessage `json:"message,omitempty"`
	State     string       `json:"state"`
	Timestamp *time.Time   `json:"timestamp,omitempty"`
}

// kindMessage mirrors a2a.Message of a2a-go v0.3.x.
type kindMessage struct {
	Kind           kindTag     `json:"kind"`
	ID             string      `json:"messageId"`
	ContextID      string      `json:"contextId,omitempty"`
	Extensions     []string    `json:"extensions,omitempty"`
	Metadata       jsonObject  `json:"metadata,omitempty"`
	Parts          []*kindPart `json:"parts"`
	ReferenceTasks []string    `json:"referenceTaskIds,omitempty"`
	Role           string      `json:"role"`
	TaskID         string      `json:"taskId,omitempty"`
}

// kindArtifact mirrors a2a.Artifact of a2a-go v0.3.x.
type kindArtifact struct {
	ID          string      `json:"artifactId"`
	Description string      `json:"description,omitempty"`
	Extensions  []string    `json:"extensions,omitempty"`
	Metadata    jsonObject  `json:"metadata,omitempty"`
	Name        string      `json:"name,omitempty"`
	Parts       []*kindPart `json:"parts"`
}

// kindPart mirrors the parts of a2a-go v0.3.x: TextPart, DataPart and FilePart, told
// apart by kind.
type kindPart struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     *kindFile       `json:"file,omitempty"`
	Metadata jsonObject      `json:"metadata,omitempty"`
}

// kindFile mirrors FileBytes and FileURI of a2a-go v0.3.x: exactly one of bytes
// (base64) and uri is set.
type kindFile struct {
	MimeType string  `json:"mimeType,omitempty"`
	Name     string  `json:"name,omitempty"`
	Bytes    *string `json:"bytes,omitempty"`
	URI      *string `json:"uri,omitempty"`
}

// dataPartCompat is the part metadata with which a2a-go's v0.3 conversion marks a
// v1.0 data part whose value is not an object, wrapped as {"value": …}.
const dataPartCompat = "data_part_compat"

// The conversions below follow a2acompat/a2av0's (ToV1Task, FromV1Task and the
// functions they call), so that a v0.3 client gets from the middleware what it gets
// from a2a-go's v0.3 handlers.

var v1ToKindState = map[string]string{
	"TASK_STATE_AUTH_REQUIRED":  "auth-required",
	v1StateCanceled:             "canceled",
	"TASK_STATE_COMPLETED":      "completed",
	"TASK_STATE_FAILED":         "failed",
	"TASK_STATE_INPUT_REQUIRED": "input-required",
	"TASK_STATE_REJECTED":       "rejected",
	"TASK_STATE_SUBMITTED":      "submitted",
	"TASK_STATE_WORKING":        "working",
}

var kindToV1State = func() map[string]string {
	m := make(map[string]string, len(v1ToKindState))
	for k, v := range v1ToKindState {
		m[v] = k
	}
	return m
}()

// stateKindToV1 maps a v0.3 state to v1.0's; unknown ones are unspecified.
func stateKindToV1(s string) string {
	if v, ok := kindToV1State[s]; ok {
		return v
	}
	return v1StateUnspecified
}

// roleKindToV1 maps a v0.3 role to v1.0's; unknown ones are unspecified.
func roleKindToV1(r string) string {
	switch r {
	case "user":
		return v1RoleUser
	case "agent":
		return v1RoleAgent
	}
	return v1RoleUnspecified
}

// roleV1ToKind maps a v1.0 role to v0.3's; unknown ones are unspecified ("").
func roleV1ToKind(r string) string {
	switch r {
	case v1RoleUser:
		return "user"
	case v1RoleAgent:
		return "agent"
	}
	return ""
}

func kindTaskToV1(t *kindTask) (*v1Task, error) {
	out := &v1Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata,
		Status: v1Status{State: stateKindToV1(t.Status.State), Timestamp: t.Status.Timestamp}}
	var err error
	if t.Status.Message != nil {
		if out.Status.Message, err = kindMessageToV1(t.Status.Message); err != nil {
			return nil, err
		}
	}
	for _, a := range t.Artifacts {
		var v *v1Artifact
		if a != nil {
			parts, err := kindPartsToV1(a.Parts)
			if err != nil {
				return nil, err
			}
			v = &v1Artifact{ID: a.ID, Description: a.Description, Extensions: a.Extensions, Metadata: a.Metadata, Name: a.Name, Parts: parts}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *v1Message
		if m != nil {
			if v, err = kindMessageToV1(m); err != nil {
				return nil, err
			}
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func kindMessageToV1(m *kindMessage) (*v1Message, error) {
	parts, err := kindPartsToV1(m.Parts)
	if err != nil {
		return nil, err
	}
	return &v1Message{ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata, Parts: parts,
		ReferenceTasks: m.ReferenceTasks, Role: roleKindToV1(m.Role), TaskID: m.TaskID}, nil
}

func kindPartsToV1(parts []*kindPart) ([]*v1Part, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	out := make([]*v1Part, len(parts))
	for i, p := range parts {
		v, err := kindPartToV1(p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// errPart reports a part a v0.3 client would refuse to decode.
var errPart = errors.New("invalid part")

func kindPartToV1(p *kindPart) (*v1Part, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: null", errPart)
	}
	switch p.Kind {
	case "text":
		var text string
		if p.Text != nil {
			text = *p.Text
		}
		return &v1Part{Text: &text, Metadata: p.Metadata}, nil
	case "data":
		var data jsonObject
		if !isNull(p.Data) {
			if err := json.Unmarshal(p.Data, &data); err != nil {
				return nil, fmt.Errorf("%w: data is not an object", errPart)
			}
		}
		metadata := maps.Clone(p.Metadata)
		value := json.RawMessage(p.Data)
		if isNull(value) {
			value = rawNull
		}
		if compat, ok := metadata[dataPartCompat]; ok && string(bytes.TrimSpace(compat)) == "true" {
			value = data["value"]
			if value == nil {
				value = rawNull
			}
			delete(metadata, dataPartCompat)
		}
		return &v1Part{Data: &value, Metadata: metadata}, nil
	case "file":
		var f kindFile
		if p.File != nil {
			f = *p.File
		}
		var b, uri string
		if f.Bytes != nil {
			b = *f.Bytes
		}
		if f.URI != nil {
			uri = *f.URI
		}
		switch {
		case b == "" && uri == "":
			return nil, fmt.Errorf("%w: a file part needs bytes or uri", errPart)
		case b != "" && uri != "":
			return nil, fmt.Errorf("%w: a file part has both bytes and uri", errPart)
		case b != "":
			raw, err := base64.StdEncoding.DecodeString(b)
			if err != nil {
				raw = []byte(b) // as a2a-go does
			}
			return &v1Part{Raw: &raw, MediaType: f.MimeType, Filename: f.Name, Metadata: p.Metadata}, nil
		}
		return &v1Part{URL: &uri, MediaType: f.MimeType, Filename: f.Name, Metadata: p.Metadata}, nil
	}
	return nil, fmt.Errorf("%w: unknown kind %q", errPart, p.Kind)
}

func v1TaskToKind(t *v1Task) (*kindTask, error) {
	out := &kindTask{Kind: "task", ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata,
		Status: kindStatus{State: v1ToKindState[t.Status.State], Timestamp: t.Status.Timestamp}}
	var err error
	if t.Status.Message != nil {
		if out.Status.Message, err = v1MessageToKind(t.Status.Message); err != nil {
			return nil, err
		}
	}
	for _, a := range t.Artifacts {
		var v *kindArtifact
		if a != nil {
			parts, err := v1PartsToKind(a.Parts)
			if err != nil {
				return nil, err
			}
			v = &kindArtifact{ID: a.ID, Description: a.Description, Extensions: a.Extensions, Metadata: a.Metadata, Name: a.Name, Parts: parts}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *kindMessage
		if m != nil {
			if v, err = v1MessageToKind(m); err != nil {
				return nil, err
			}
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func v1MessageToKind(m *v1Message) (*kindMessage, error) {
	parts, err := v1PartsToKind(m.Parts)
	if err != nil {
		return nil, err
	}
	return &kindMessage{Kind: "message", ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata,
		Parts: parts, ReferenceTasks: m.ReferenceTasks, Role: roleV1ToKind(m.Role), TaskID: m.TaskID}, nil
}

// v1PartsToKind converts parts; none is an empty list, as a2a-go v0.3.x writes it.
func v1PartsToKind(parts []*v1Part) ([]*kindPart, error) {
	out := make([]*kindPart, 0, len(parts))
	for _, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("%w: null", errPart)
		}
		v, err := v1PartToKind(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func v1PartToKind(p *v1Part) (*kindPart, error) {
	switch p.content() {
	case partText:
		return &kindPart{Kind: "text", Text: p.Text, Metadata: p.Metadata}, nil
	case partData:
		value, metadata := *p.Data, maps.Clone(p.Metadata)
		if !isJSONObject(value) {
			// As a2a-go does, so that a v0.3 client, which takes only objects, reads it.
			wrapped, err := json.Marshal(jsonObject{"value": value})
			if err != nil {
				return nil, err
			}
			value = wrapped
			if metadata == nil {
				metadata = jsonObject{}
			}
			metadata[dataPartCompat] = json.RawMessage("true")
		}
		return &kindPart{Kind: "data", Data: value, Metadata: metadata}, nil
	case partRaw:
		b := base64.StdEncoding.EncodeToString(*p.Raw)
		return &kindPart{Kind: "file", File: &kindFile{MimeType: p.MediaType, Name: p.Filename, Bytes: &b}, Metadata: p.Metadata}, nil
	case partURL:
		return &kindPart{Kind: "file", File: &kindFile{MimeType: p.MediaType, Name: p.Filename, URI: p.URL}, Metadata: p.Metadata}, nil
	}
	// A part without content, which a2a-go would not have decoded: wrapped as data,
	// as a2a-go's conversion wraps one.
	whole, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(jsonObject{"value": whole})
	if err != nil {
		return nil, err
	}
	return &kindPart{Kind: "data", Data: data, Metadata: p.Metadata}, nil
}
