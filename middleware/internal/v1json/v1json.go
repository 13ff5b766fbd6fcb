// Package v1json holds the A2A v1.0 objects (Task, Message, Artifact, Part) as
// a2a-go v2.4.0 marshals them, for the middleware's codecs of other versions, which
// convert to and from them.
package v1json

import (
	"bytes"
	"encoding/json"
	"time"
)

// The types below mirror the A2A v1.0 objects a binding of another version converts
// from and to (a2a.Task, a2a.Message, a2a.Artifact, a2a.Part of a2a-go v2.4.0), with
// their json tags, so that what they marshal is what a2a-go marshals. Opaque values
// (metadata, data) are kept as raw JSON: they pass through exactly, where a2a-go
// would round numbers through float64.

// Object is a JSON object whose values are kept as they are.
type Object = map[string]json.RawMessage

// Task mirrors a2a.Task.
type Task struct {
	ID        string      `json:"id"`
	Artifacts []*Artifact `json:"artifacts,omitempty"`
	ContextID string      `json:"contextId"`
	History   []*Message  `json:"history,omitempty"`
	Metadata  Object      `json:"metadata,omitempty"`
	Status    Status      `json:"status"`
}

// Status mirrors a2a.TaskStatus.
type Status struct {
	Message   *Message   `json:"message,omitempty"`
	State     string     `json:"state"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// Message mirrors a2a.Message.
type Message struct {
	ID             string   `json:"messageId"`
	ContextID      string   `json:"contextId,omitempty"`
	Extensions     []string `json:"extensions,omitempty"`
	Metadata       Object   `json:"metadata,omitempty"`
	Parts          []*Part  `json:"parts"`
	ReferenceTasks []string `json:"referenceTaskIds,omitempty"`
	Role           string   `json:"role"`
	TaskID         string   `json:"taskId,omitempty"`
}

// Artifact mirrors a2a.Artifact.
type Artifact struct {
	ID          string   `json:"artifactId"`
	Description string   `json:"description,omitempty"`
	Extensions  []string `json:"extensions,omitempty"`
	Metadata    Object   `json:"metadata,omitempty"`
	Name        string   `json:"name,omitempty"`
	Parts       []*Part  `json:"parts"`
}

// Part mirrors the JSON of a2a.Part: one of text, raw (base64), data and url, with
// an optional filename, media type and metadata.
type Part struct {
	Text      *string          `json:"text,omitempty"`
	Raw       *[]byte          `json:"raw,omitempty"`
	Data      *json.RawMessage `json:"data,omitempty"`
	URL       *string          `json:"url,omitempty"`
	Filename  string           `json:"filename,omitempty"`
	MediaType string           `json:"mediaType,omitempty"`
	Metadata  Object           `json:"metadata,omitempty"`
}

// PartContent names the content of a v1.0 part.
type PartContent int

const (
	PartNone PartContent = iota // no content (a2a-go refuses such a part)
	PartText
	PartRaw
	PartData
	PartURL
)

// Content returns what p holds, in the order a2a-go reads a part's members.
func (p *Part) Content() PartContent {
	switch {
	case p.Text != nil:
		return PartText
	case p.Raw != nil:
		return PartRaw
	case p.Data != nil:
		return PartData
	case p.URL != nil && *p.URL != "":
		return PartURL
	}
	return PartNone
}

// The task states and message roles of A2A v1.0 on the wire.
const (
	StateUnspecified = "TASK_STATE_UNSPECIFIED"
	StateCanceled    = "TASK_STATE_CANCELED"
	RoleUnspecified  = "ROLE_UNSPECIFIED"
	RoleUser         = "ROLE_USER"
	RoleAgent        = "ROLE_AGENT"
)

// IsObject reports whether raw is a JSON object.
func IsObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// Null is JSON null.
var Null = json.RawMessage("null")

// Convert decodes raw into an In, converts it with fn and returns the JSON of the
// result.
func Convert[In, Out any](raw []byte, fn func(*In) (*Out, error)) ([]byte, error) {
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	out, err := fn(&in)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// IsNull reports whether raw is absent or JSON null.
func IsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}
