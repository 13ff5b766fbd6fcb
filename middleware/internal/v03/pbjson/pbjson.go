// Package pbjson is the codec of A2A v0.3's HTTP+JSON binding: the proto JSON of
// v0.3's google.a2a.v1 objects as a2a-go's a2apb/v0/pbjson marshals them, converted
// to and from A2A v1.0's (package v1json) as pbjson converts them.
package pbjson

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/a2akit/idempotency/middleware/internal/v1json"
)

// TaskToV1 converts the JSON of a v0.3 proto task to v1.0's.
func TaskToV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, pbTaskToV1) }

// MessageToV1 converts the JSON of a v0.3 proto message to v1.0's.
func MessageToV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, pbMessageToV1) }

// TaskFromV1 converts the JSON of a v1.0 task to v0.3's proto JSON.
func TaskFromV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, v1TaskToPB) }

// MessageFromV1 converts the JSON of a v1.0 message to v0.3's proto JSON.
func MessageFromV1(raw []byte) ([]byte, error) { return v1json.Convert(raw, v1MessageToPB) }

// The types below mirror a2a-go's pbjson types (a2apb/v0/pbjson), the proto JSON of
// A2A v0.3's HTTP+JSON binding: a message's parts are "content", a part is text, a
// file (with fileWithUri or fileWithBytes) or data (under data.data), states are
// TASK_STATE_* with CANCELLED spelled the British way.

// pbTask mirrors pbjson.Task.
type pbTask struct {
	ID        string        `json:"id,omitempty"`
	ContextID string        `json:"contextId,omitempty"`
	Status    *pbStatus     `json:"status,omitempty"`
	Artifacts []*pbArtifact `json:"artifacts,omitempty"`
	History   []*pbMessage  `json:"history,omitempty"`
	Metadata  v1json.Object `json:"metadata,omitempty"`
}

// pbStatus mirrors pbjson.TaskStatus.
type pbStatus struct {
	State     string     `json:"state,omitempty"`
	Message   *pbMessage `json:"message,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// pbMessage mirrors pbjson.Message.
type pbMessage struct {
	MessageID  string        `json:"messageId,omitempty"`
	ContextID  string        `json:"contextId,omitempty"`
	TaskID     string        `json:"taskId,omitempty"`
	Role       string        `json:"role,omitempty"`
	Content    []*pbPart     `json:"content,omitempty"`
	Metadata   v1json.Object `json:"metadata,omitempty"`
	Extensions []string      `json:"extensions,omitempty"`
}

// pbArtifact mirrors pbjson.Artifact.
type pbArtifact struct {
	ArtifactID  string        `json:"artifactId,omitempty"`
	Name        string        `json:"name,omitempty"`
	Description string        `json:"description,omitempty"`
	Parts       []*pbPart     `json:"parts,omitempty"`
	Metadata    v1json.Object `json:"metadata,omitempty"`
	Extensions  []string      `json:"extensions,omitempty"`
}

// pbPart mirrors pbjson.Part.
type pbPart struct {
	Text     *string       `json:"text,omitempty"`
	File     *pbFile       `json:"file,omitempty"`
	Data     *pbData       `json:"data,omitempty"`
	Metadata v1json.Object `json:"metadata,omitempty"`
}

// pbFile mirrors pbjson.FilePart. fileWithBytes is base64 of base64 of the bytes, as
// v0.3 peers write it.
type pbFile struct {
	FileWithURI   string `json:"fileWithUri,omitempty"`
	FileWithBytes string `json:"fileWithBytes,omitempty"`
	MimeType      string `json:"mimeType,omitempty"`
	Name          string `json:"name,omitempty"`
}

// pbData mirrors pbjson.DataPart.
type pbData struct {
	Data json.RawMessage `json:"data,omitempty"`
}

// The conversions below follow a2a-go's pbjson ones (FromProtoTask, ToProtoTask and
// the functions they call), so that a v0.3 client gets from the middleware what it
// gets from a2av0's handler. Like them, they drop a message's referenceTaskIds, and
// replace a part they cannot read with an empty one.

const (
	pbStateCancelled = "TASK_STATE_CANCELLED"
)

// statePBToV1 maps a v0.3 proto state to v1.0's.
func statePBToV1(s string) string {
	switch s {
	case "", v1json.StateUnspecified:
		return v1json.StateUnspecified
	case pbStateCancelled:
		return v1json.StateCanceled
	}
	return s
}

// stateV1ToPB maps a v1.0 state to v0.3's proto one.
func stateV1ToPB(s string) string {
	switch s {
	case "":
		return v1json.StateUnspecified
	case v1json.StateCanceled:
		return pbStateCancelled
	}
	return s
}

// rolePBToV1 maps a v0.3 proto role to v1.0's; unknown ones are unspecified.
func rolePBToV1(r string) string {
	switch r {
	case v1json.RoleUser, v1json.RoleAgent:
		return r
	}
	return v1json.RoleUnspecified
}

// roleV1ToPB maps a v1.0 role to v0.3's proto one, which has the same names.
func roleV1ToPB(r string) string {
	if r == "" {
		return v1json.RoleUnspecified
	}
	return r
}

func pbTaskToV1(t *pbTask) (*v1json.Task, error) {
	out := &v1json.Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata, Status: v1json.Status{State: v1json.StateUnspecified}}
	if t.Status != nil {
		out.Status = v1json.Status{State: statePBToV1(t.Status.State), Timestamp: t.Status.Timestamp}
		if t.Status.Message != nil {
			out.Status.Message = pbMessageToV1Msg(t.Status.Message)
		}
	}
	for _, a := range t.Artifacts {
		var v *v1json.Artifact
		if a != nil {
			v = &v1json.Artifact{ID: a.ArtifactID, Name: a.Name, Description: a.Description, Metadata: a.Metadata,
				Extensions: a.Extensions, Parts: pbPartsToV1(a.Parts)}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *v1json.Message
		if m != nil {
			v = pbMessageToV1Msg(m)
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func pbMessageToV1(m *pbMessage) (*v1json.Message, error) { return pbMessageToV1Msg(m), nil }

func pbMessageToV1Msg(m *pbMessage) *v1json.Message {
	return &v1json.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: rolePBToV1(m.Role),
		Metadata: m.Metadata, Extensions: m.Extensions, Parts: pbPartsToV1(m.Content)}
}

func pbPartsToV1(parts []*pbPart) []*v1json.Part {
	if len(parts) == 0 {
		return nil
	}
	out := make([]*v1json.Part, 0, len(parts))
	for _, p := range parts {
		out = append(out, pbPartToV1(p))
	}
	return out
}

// pbPartToV1 converts a part; one it cannot read becomes an empty part.
func pbPartToV1(p *pbPart) *v1json.Part {
	if p == nil {
		return &v1json.Part{}
	}
	out := &v1json.Part{Metadata: p.Metadata}
	switch {
	case p.Text != nil:
		out.Text = p.Text
	case p.File != nil:
		out.MediaType, out.Filename = p.File.MimeType, p.File.Name
		switch {
		case p.File.FileWithURI != "":
			out.URL = &p.File.FileWithURI
		case p.File.FileWithBytes != "":
			outer, err := base64.StdEncoding.DecodeString(p.File.FileWithBytes)
			if err != nil {
				return &v1json.Part{}
			}
			inner, err := base64.StdEncoding.DecodeString(string(outer))
			if err != nil {
				return &v1json.Part{}
			}
			out.Raw = &inner
		}
	case p.Data != nil:
		value := p.Data.Data
		if v1json.IsNull(value) {
			value = v1json.Null
		}
		out.Data = &value
	default:
		return &v1json.Part{}
	}
	return out
}

func v1TaskToPB(t *v1json.Task) (*pbTask, error) {
	out := &pbTask{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata,
		Status: &pbStatus{State: stateV1ToPB(t.Status.State)}}
	if t.Status.Message != nil {
		out.Status.Message = v1MessageToPBMsg(t.Status.Message)
	}
	if ts := t.Status.Timestamp; ts != nil {
		utc := ts.UTC()
		out.Status.Timestamp = &utc
	}
	for _, a := range t.Artifacts {
		var v *pbArtifact
		if a != nil {
			v = &pbArtifact{ArtifactID: a.ID, Name: a.Name, Description: a.Description, Metadata: a.Metadata,
				Extensions: a.Extensions, Parts: v1PartsToPB(a.Parts)}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *pbMessage
		if m != nil {
			v = v1MessageToPBMsg(m)
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func v1MessageToPB(m *v1json.Message) (*pbMessage, error) { return v1MessageToPBMsg(m), nil }

func v1MessageToPBMsg(m *v1json.Message) *pbMessage {
	return &pbMessage{MessageID: m.ID, ContextID: m.ContextID, TaskID: m.TaskID, Role: roleV1ToPB(m.Role),
		Metadata: m.Metadata, Extensions: m.Extensions, Content: v1PartsToPB(m.Parts)}
}

func v1PartsToPB(parts []*v1json.Part) []*pbPart {
	if len(parts) == 0 {
		return nil
	}
	out := make([]*pbPart, 0, len(parts))
	for _, p := range parts {
		out = append(out, v1PartToPB(p))
	}
	return out
}

func v1PartToPB(p *v1json.Part) *pbPart {
	if p == nil {
		return &pbPart{}
	}
	out := &pbPart{Metadata: p.Metadata}
	switch p.Content() {
	case v1json.PartText:
		out.Text = p.Text
	case v1json.PartRaw:
		inner := base64.StdEncoding.EncodeToString(*p.Raw)
		out.File = &pbFile{FileWithBytes: base64.StdEncoding.EncodeToString([]byte(inner)), MimeType: p.MediaType, Name: p.Filename}
	case v1json.PartURL:
		out.File = &pbFile{FileWithURI: *p.URL, MimeType: p.MediaType, Name: p.Filename}
	case v1json.PartData:
		value := *p.Data
		if v1json.IsNull(value) {
			value = nil
		}
		out.Data = &pbData{Data: value}
	}
	return out
}
