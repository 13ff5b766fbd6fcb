package middleware

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

// jsonObject is a JSON object whose values are kept as they are.
type jsonObject = map[string]json.RawMessage

// v1Task mirrors a2a.Task.
type v1Task struct {
	ID        string        `json:"id"`
	Artifacts []*v1Artifact `json:"artifacts,omitempty"`
	ContextID string        `json:"contextId"`
	History   []*v1Message  `json:"history,omitempty"`
	Metadata  jsonObject    `json:"metadata,omitempty"`
	Status    v1Status      `json:"status"`
}

// v1Status mirrors a2a.TaskStatus.
type v1Status struct {
	Message   *v1Message `json:"message,omitempty"`
	State     string     `json:"state"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// v1Message mirrors a2a.Message.
type v1Message struct {
	ID             string     `json:"messageId"`
	ContextID      string     `json:"contextId,omitempty"`
	Extensions     []string   `json:"extensions,omitempty"`
	Metadata       jsonObject `json:"metadata,omitempty"`
	Parts          []*v1Part  `json:"parts"`
	ReferenceTasks []string   `json:"referenceTaskIds,omitempty"`
	Role           string     `json:"role"`
	TaskID         string     `json:"taskId,omitempty"`
}

// v1Artifact mirrors a2a.Artifact.
type v1Artifact struct {
	ID          string     `json:"artifactId"`
	Description string     `json:"description,omitempty"`
	Extensions  []string   `json:"extensions,omitempty"`
	Metadata    jsonObject `json:"metadata,omitempty"`
	Name        string     `json:"name,omitempty"`
	Parts       []*v1Part  `json:"parts"`
}

// v1Part mirrors the JSON of a2a.Part: one of text, raw (base64), data and url, with
// an optional filename, media type and metadata.
type v1Part struct {
	Text      *string          `json:"text,omitempty"`
	Raw       *[]byte          `json:"raw,omitempty"`
	Data      *json.RawMessage `json:"data,omitempty"`
	URL       *string          `json:"url,omitempty"`
	Filename  string           `json:"filename,omitempty"`
	MediaType string           `json:"mediaType,omitempty"`
	Metadata  jsonObject       `json:"metadata,omitempty"`
}

// v1PartContent names the content of a v1.0 part.
type v1PartContent int

const (
	partNone v1PartContent = iota // no content (a2a-go refuses such a part)
	partText
	partRaw
	partData
	partURL
)

// content returns what p holds, in the order a2a-go reads a part's members.
func (p *v1Part) content() v1PartContent {
	switch {
	case p.Text != nil:
		return partText
	case p.Raw != nil:
		return partRaw
	case p.Data != nil:
		return partData
	case p.URL != nil && *p.URL != "":
		return partURL
	}
	return partNone
}

// The task states and message roles of A2A v1.0 on the wire.
const (
	v1StateUnspecified = "TASK_STATE_UNSPECIFIED"
	v1StateCanceled    = "TASK_STATE_CANCELED"
	v1RoleUnspecified  = "ROLE_UNSPECIFIED"
	v1RoleUser         = "ROLE_USER"
	v1RoleAgent        = "ROLE_AGENT"
)

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// rawNull is JSON null.
var rawNull = json.RawMessage("null")

// convertJSON decodes raw into an In, converts it with fn and returns the JSON of the
// result.
func convertJSON[In, Out any](raw []byte, fn func(*In) (*Out, error)) ([]byte, error) {
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
