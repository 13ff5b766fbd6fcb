// Package kindjson is the codec of A2A v0.3's JSON-RPC binding: its task and
// message objects as a2a-go v0.3.x marshals them (a "kind" member on each), converted
// to and from A2A v1.0's (package v1json) as a2a-go's a2acompat/a2av0 converts them.
package kindjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/a2akit/idempotency/middleware/internal/v1json"
)

// TaskToV1 converts the JSON of a v0.3 task to v1.0's.
func TaskToV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, kindTaskToV1) }

// MessageToV1 converts the JSON of a v0.3 message to v1.0's.
func MessageToV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, kindMessageToV1) }

// TaskFromV1 converts the JSON of a v1.0 task to v0.3's.
func TaskFromV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, v1TaskToKind) }

// MessageFromV1 converts the JSON of a v1.0 message to v0.3's.
func MessageFromV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, v1MessageToKind) }

// Kind returns the kind member of a v0.3 object, or "".
func Kind(raw json.RawMessage) string {
	var v struct {
		Kind string `json:"kind"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v.Kind
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
	Metadata  v1json.Object   `json:"metadata,omitempty"`
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
	Kind           kindTag       `json:"kind"`
	ID             string        `json:"messageId"`
	ContextID      string        `json:"contextId,omitempty"`
	Extensions     []string      `json:"extensions,omitempty"`
	Metadata       v1json.Object `json:"metadata,omitempty"`
	Parts          []*kindPart   `json:"parts"`
	ReferenceTasks []string      `json:"referenceTaskIds,omitempty"`
	Role           string        `json:"role"`
	TaskID         string        `json:"taskId,omitempty"`
}

// kindArtifact mirrors a2a.Artifact of a2a-go v0.3.x.
type kindArtifact struct {
	ID          string        `json:"artifactId"`
	Description string        `json:"description,omitempty"`
	Extensions  []string      `json:"extensions,omitempty"`
	Metadata    v1json.Object `json:"metadata,omitempty"`
	Name        string        `json:"name,omitempty"`
	Parts       []*kindPart   `json:"parts"`
}

// kindPart mirrors the parts of a2a-go v0.3.x: TextPart, DataPart and FilePart, told
// apart by kind.
type kindPart struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     *kindFile       `json:"file,omitempty"`
	Metadata v1json.Object   `json:"metadata,omitempty"`
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
	v1json.StateCanceled:        "canceled",
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
	return v1json.StateUnspecified
}

// roleKindToV1 maps a v0.3 role to v1.0's; unknown ones are unspecified.
func roleKindToV1(r string) string {
	switch r {
	case "user":
		return v1json.RoleUser
	case "agent":
		return v1json.RoleAgent
	}
	return v1json.RoleUnspecified
}

// roleV1ToKind maps a v1.0 role to v0.3's; unknown ones are unspecified ("").
func roleV1ToKind(r string) string {
	switch r {
	case v1json.RoleUser:
		return "user"
	case v1json.RoleAgent:
		return "agent"
	}
	return ""
}

func kindTaskToV1(t *kindTask) (*v1json.Task, error) {
	out := &v1json.Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata,
		Status: v1json.Status{State: stateKindToV1(t.Status.State), Timestamp: t.Status.Timestamp}}
	var err error
	if t.Status.Message != nil {
		if out.Status.Message, err = kindMessageToV1(t.Status.Message); err != nil {
			return nil, err
		}
	}
	for _, a := range t.Artifacts {
		var v *v1json.Artifact
		if a != nil {
			parts, err := kindPartsToV1(a.Parts)
			if err != nil {
				return nil, err
			}
			v = &v1json.Artifact{ID: a.ID, Description: a.Description, Extensions: a.Extensions, Metadata: a.Metadata, Name: a.Name, Parts: parts}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *v1json.Message
		if m != nil {
			if v, err = kindMessageToV1(m); err != nil {
				return nil, err
			}
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func kindMessageToV1(m *kindMessage) (*v1json.Message, error) {
	parts, err := kindPartsToV1(m.Parts)
	if err != nil {
		return nil, err
	}
	return &v1json.Message{ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata, Parts: parts,
		ReferenceTasks: m.ReferenceTasks, Role: roleKindToV1(m.Role), TaskID: m.TaskID}, nil
}

func kindPartsToV1(parts []*kindPart) ([]*v1json.Part, error) {
	if len(parts) == 0 {
		return nil, nil
	}
	out := make([]*v1json.Part, len(parts))
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

func kindPartToV1(p *kindPart) (*v1json.Part, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: null", errPart)
	}
	switch p.Kind {
	case "text":
		var text string
		if p.Text != nil {
			text = *p.Text
		}
		return &v1json.Part{Text: &text, Metadata: p.Metadata}, nil
	case "data":
		return kindDataToV1(p)
	case "file":
		return kindFileToV1(p)
	}
	return nil, fmt.Errorf("%w: unknown kind %q", errPart, p.Kind)
}

// kindDataToV1 converts a data part, unwrapping a value a2a-go wrapped for v0.3.
func kindDataToV1(p *kindPart) (*v1json.Part, error) {
	var data v1json.Object
	if !v1json.IsNull(p.Data) {
		if err := json.Unmarshal(p.Data, &data); err != nil {
			return nil, fmt.Errorf("%w: data is not an object", errPart)
		}
	}
	metadata := maps.Clone(p.Metadata)
	value := json.RawMessage(p.Data)
	if v1json.IsNull(value) {
		value = v1json.Null
	}
	if compat, ok := metadata[dataPartCompat]; ok && string(bytes.TrimSpace(compat)) == "true" {
		value = data["value"]
		if value == nil {
			value = v1json.Null
		}
		delete(metadata, dataPartCompat)
	}
	return &v1json.Part{Data: &value, Metadata: metadata}, nil
}

// kindFileToV1 converts a file part: its bytes or its uri, never both.
func kindFileToV1(p *kindPart) (*v1json.Part, error) {
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
		return &v1json.Part{Raw: &raw, MediaType: f.MimeType, Filename: f.Name, Metadata: p.Metadata}, nil
	}
	return &v1json.Part{URL: &uri, MediaType: f.MimeType, Filename: f.Name, Metadata: p.Metadata}, nil
}

func v1TaskToKind(t *v1json.Task) (*kindTask, error) {
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

func v1MessageToKind(m *v1json.Message) (*kindMessage, error) {
	parts, err := v1PartsToKind(m.Parts)
	if err != nil {
		return nil, err
	}
	return &kindMessage{Kind: "message", ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata,
		Parts: parts, ReferenceTasks: m.ReferenceTasks, Role: roleV1ToKind(m.Role), TaskID: m.TaskID}, nil
}

// v1PartsToKind converts parts; none is an empty list, as a2a-go v0.3.x writes it.
func v1PartsToKind(parts []*v1json.Part) ([]*kindPart, error) {
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

func v1PartToKind(p *v1json.Part) (*kindPart, error) {
	switch p.Content() {
	case v1json.PartText:
		return &kindPart{Kind: "text", Text: p.Text, Metadata: p.Metadata}, nil
	case v1json.PartData:
		value, metadata := *p.Data, maps.Clone(p.Metadata)
		if !v1json.IsObject(value) {
			// As a2a-go does, so that a v0.3 client, which takes only objects, reads it.
			wrapped, err := json.Marshal(v1json.Object{"value": value})
			if err != nil {
				return nil, err
			}
			value = wrapped
			if metadata == nil {
				metadata = v1json.Object{}
			}
			metadata[dataPartCompat] = json.RawMessage("true")
		}
		return &kindPart{Kind: "data", Data: value, Metadata: metadata}, nil
	case v1json.PartRaw:
		b := base64.StdEncoding.EncodeToString(*p.Raw)
		return &kindPart{Kind: "file", File: &kindFile{MimeType: p.MediaType, Name: p.Filename, Bytes: &b}, Metadata: p.Metadata}, nil
	case v1json.PartURL:
		return &kindPart{Kind: "file", File: &kindFile{MimeType: p.MediaType, Name: p.Filename, URI: p.URL}, Metadata: p.Metadata}, nil
	}
	// A part without content, which a2a-go would not have decoded: wrapped as data,
	// as a2a-go's conversion wraps one.
	whole, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v1json.Object{"value": whole})
	if err != nil {
		return nil, err
	}
	return &kindPart{Kind: "data", Data: data, Metadata: p.Metadata}, nil
}
