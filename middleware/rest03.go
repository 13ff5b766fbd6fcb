package middleware

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"
)

// rest03 is the HTTP+JSON binding of A2A v0.3, as a2a-go's
// a2acompat/a2av0.NewRESTHandler serves it: POST {mount}/v1/message:send and
// {mount}/v1/message:stream, with bodies in the proto JSON of v0.3's google.a2a.v1
// proto (a message's parts are "content", its roles ROLE_USER and ROLE_AGENT, a
// configuration has "blocking", and there is no tenant). Answers are wrapped as
// v1.0's are ({"task": …} or {"message": …}, and statusUpdate or artifactUpdate
// events in streams), with v0.3's objects inside. A task is read with GET
// {mount}/v1/tasks/{id}?historyLength=n and followed with GET
// {mount}/v1/tasks/{id}:subscribe. Its errors are v1.0's google.rpc.Status bodies.
//
// v1.0's HTTP+JSON binding serves every path ending in /message:send, so route tells
// the two apart by path and body together: a send is v0.3's when its path ends in
// /v1/message:send or /v1/message:stream (v0.3's fixed prefix) and its message has a
// "content" member (matched as encoding/json matches names; null counts as absent).
// A v0.3 message carries its parts in content, and a v0.3 server runs no message
// without it; a v1.0 message carries them in parts and has no content member, which
// a v1.0 server ignores. So a v1.0 server mounted under a /v1 prefix, or a tenant
// named "v1", keeps its v1.0 reading, and a send that a v0.3 server runs is always
// read as v0.3's; the path alone would misread the first. Either reading gets the
// message id and the key a server that runs the send gets (the fields are the same,
// decoded alike; a body the v0.3 reading cannot decode goes to v1.0's). They differ
// only in the tenant (none in v0.3), in a historyLength of 0 (absent in v0.3), and in
// the shape of the answers, which a crafted body holding both content and parts
// could get wrong for a v1.0 server; a client sending those harms only its own scope.
type rest03 struct{}

// restPrefix03 is the path segment a2a-go's v0.3 handler serves every route under
// (a2av0.RESTPathPrefix).
const restPrefix03 = "/v1"

func (rest03) framing() ProtocolBinding { return BindingHTTPJSON }
func (rest03) version() ProtocolVersion { return Version03 }

// rest03Params mirrors a2a-go's pbjson.SendMessageRequest (a2apb/v0/pbjson, the
// fields the middleware needs, with the same types and tags), which a2av0's handler
// decodes the whole body into with json.Unmarshal: no trailing bytes, and a
// historyLength that is an int32 whose 0 means absent.
type rest03Params struct {
	Config  *rest03Config  `json:"configuration,omitempty"`
	Message *rest03Message `json:"message,omitempty"`
}

// rest03Config mirrors pbjson.SendMessageConfiguration.
type rest03Config struct {
	HistoryLength int32 `json:"historyLength,omitempty"`
}

// rest03Message mirrors pbjson.Message. Content is kept raw: only its presence is
// read, to tell a v0.3 message from a v1.0 one.
type rest03Message struct {
	ID       string          `json:"messageId,omitempty"`
	TaskID   string          `json:"taskId,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// readSend reads body as a v0.3 send at prefix, as a2av0 decodes it, and reports
// whether it does: false too for a message without content, which is v1.0's.
func (b rest03) readSend(prefix string, streaming bool, body []byte) (*send, bool) {
	var p rest03Params
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false
	}
	if p.Message == nil || isNull(p.Message.Content) {
		return nil, false // not a v0.3 message: v1.0's binding reads it
	}
	s := &send{d: b, prefix: prefix, streaming: streaming}
	var c *sendConfig
	if p.Config != nil && p.Config.HistoryLength != 0 {
		n := int(p.Config.HistoryLength)
		c = &sendConfig{HistoryLength: &n}
	}
	fillSend(s, c, &message{ID: p.Message.ID, Metadata: p.Message.Metadata, TaskID: p.Message.TaskID})
	return s, true
}

func (rest03) sendCarry(status int, body []byte) carry {
	if status < 200 || status > 299 {
		return carry{kind: carryError}
	}
	return pbCarry(body)
}

func (rest03) eventCarry(data []byte) carry {
	if f := eventError(data); f != nil {
		return carry{kind: carryError, fail: f}
	}
	return pbCarry(data)
}

// pbCarry reads a v0.3 SendMessageResponse or StreamResponse, with the message of a
// reply converted to v1.0.
func pbCarry(raw []byte) carry {
	v, ok := readStreamMembers(raw)
	if !ok {
		return carry{}
	}
	out := v.carry()
	if out.kind == carryMessage {
		msg, err := convertJSON(out.message, pbMessageToV1)
		if err != nil {
			return carry{}
		}
		out.message = msg
	}
	return out
}

func (rest03) eventTask(data []byte) ([]byte, bool) {
	raw, ok := streamResponseTask(data)
	if !ok {
		return nil, false
	}
	task, err := convertJSON(raw, pbTaskToV1)
	return task, err == nil
}

func (rest03) product(_ *send, res product) ([]byte, error) {
	var out product
	var err error
	if res.message != nil {
		out.message, err = convertJSON(res.message, v1MessageToPB)
	} else {
		out.task, err = convertJSON(res.task, v1TaskToPB)
	}
	if err != nil {
		return nil, err
	}
	return append(streamResponse(out), '\n'), nil
}

func (rest03) failure(_ *send, f *failure) (int, []byte, bool) { return restFailure(f) }

func (rest03) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	return rest10{}.taskRequest(r, s, taskID)
}

func (rest03) taskAnswer(status int, body []byte) ([]byte, *failure) {
	raw, f := restTaskAnswer(status, body)
	if f != nil {
		return nil, f
	}
	task, err := convertJSON(raw, pbTaskToV1)
	if err != nil {
		return nil, taskUnreadable(err.Error())
	}
	return task, nil
}

// subscribeRequest subscribes with GET, as v0.3's proto maps the call and as a2a-go's
// v0.3 client does (a2av0's handler takes POST too).
func (rest03) subscribeRequest(r *http.Request, s *send, taskID string) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = s.prefix+"/tasks/"+taskID+":subscribe", ""
	u.RawQuery = ""
	return derivedRequest(r, http.MethodGet, u, nil, "text/event-stream")
}

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
	Metadata  jsonObject    `json:"metadata,omitempty"`
}

// pbStatus mirrors pbjson.TaskStatus.
type pbStatus struct {
	State     string     `json:"state,omitempty"`
	Message   *pbMessage `json:"message,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// pbMessage mirrors pbjson.Message.
type pbMessage struct {
	MessageID  string     `json:"messageId,omitempty"`
	ContextID  string     `json:"contextId,omitempty"`
	TaskID     string     `json:"taskId,omitempty"`
	Role       string     `json:"role,omitempty"`
	Content    []*pbPart  `json:"content,omitempty"`
	Metadata   jsonObject `json:"metadata,omitempty"`
	Extensions []string   `json:"extensions,omitempty"`
}

// pbArtifact mirrors pbjson.Artifact.
type pbArtifact struct {
	ArtifactID  string     `json:"artifactId,omitempty"`
	Name        string     `json:"name,omitempty"`
	Description string     `json:"description,omitempty"`
	Parts       []*pbPart  `json:"parts,omitempty"`
	Metadata    jsonObject `json:"metadata,omitempty"`
	Extensions  []string   `json:"extensions,omitempty"`
}

// pbPart mirrors pbjson.Part.
type pbPart struct {
	Text     *string    `json:"text,omitempty"`
	File     *pbFile    `json:"file,omitempty"`
	Data     *pbData    `json:"data,omitempty"`
	Metadata jsonObject `json:"metadata,omitempty"`
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
	case "", v1StateUnspecified:
		return v1StateUnspecified
	case pbStateCancelled:
		return v1StateCanceled
	}
	return s
}

// stateV1ToPB maps a v1.0 state to v0.3's proto one.
func stateV1ToPB(s string) string {
	switch s {
	case "":
		return v1StateUnspecified
	case v1StateCanceled:
		return pbStateCancelled
	}
	return s
}

// rolePBToV1 maps a v0.3 proto role to v1.0's; unknown ones are unspecified.
func rolePBToV1(r string) string {
	switch r {
	case v1RoleUser, v1RoleAgent:
		return r
	}
	return v1RoleUnspecified
}

// roleV1ToPB maps a v1.0 role to v0.3's proto one, which has the same names.
func roleV1ToPB(r string) string {
	if r == "" {
		return v1RoleUnspecified
	}
	return r
}

func pbTaskToV1(t *pbTask) (*v1Task, error) {
	out := &v1Task{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata, Status: v1Status{State: v1StateUnspecified}}
	if t.Status != nil {
		out.Status = v1Status{State: statePBToV1(t.Status.State), Timestamp: t.Status.Timestamp}
		if t.Status.Message != nil {
			out.Status.Message = pbMessageToV1Msg(t.Status.Message)
		}
	}
	for _, a := range t.Artifacts {
		var v *v1Artifact
		if a != nil {
			v = &v1Artifact{ID: a.ArtifactID, Name: a.Name, Description: a.Description, Metadata: a.Metadata,
				Extensions: a.Extensions, Parts: pbPartsToV1(a.Parts)}
		}
		out.Artifacts = append(out.Artifacts, v)
	}
	for _, m := range t.History {
		var v *v1Message
		if m != nil {
			v = pbMessageToV1Msg(m)
		}
		out.History = append(out.History, v)
	}
	return out, nil
}

func pbMessageToV1(m *pbMessage) (*v1Message, error) { return pbMessageToV1Msg(m), nil }

func pbMessageToV1Msg(m *pbMessage) *v1Message {
	return &v1Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: rolePBToV1(m.Role),
		Metadata: m.Metadata, Extensions: m.Extensions, Parts: pbPartsToV1(m.Content)}
}

func pbPartsToV1(parts []*pbPart) []*v1Part {
	if len(parts) == 0 {
		return nil
	}
	out := make([]*v1Part, 0, len(parts))
	for _, p := range parts {
		out = append(out, pbPartToV1(p))
	}
	return out
}

// pbPartToV1 converts a part; one it cannot read becomes an empty part.
func pbPartToV1(p *pbPart) *v1Part {
	if p == nil {
		return &v1Part{}
	}
	out := &v1Part{Metadata: p.Metadata}
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
				return &v1Part{}
			}
			inner, err := base64.StdEncoding.DecodeString(string(outer))
			if err != nil {
				return &v1Part{}
			}
			out.Raw = &inner
		}
	case p.Data != nil:
		value := p.Data.Data
		if isNull(value) {
			value = rawNull
		}
		out.Data = &value
	default:
		return &v1Part{}
	}
	return out
}

func v1TaskToPB(t *v1Task) (*pbTask, error) {
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

func v1MessageToPB(m *v1Message) (*pbMessage, error) { return v1MessageToPBMsg(m), nil }

func v1MessageToPBMsg(m *v1Message) *pbMessage {
	return &pbMessage{MessageID: m.ID, ContextID: m.ContextID, TaskID: m.TaskID, Role: roleV1ToPB(m.Role),
		Metadata: m.Metadata, Extensions: m.Extensions, Content: v1PartsToPB(m.Parts)}
}

func v1PartsToPB(parts []*v1Part) []*pbPart {
	if len(parts) == 0 {
		return nil
	}
	out := make([]*pbPart, 0, len(parts))
	for _, p := range parts {
		out = append(out, v1PartToPB(p))
	}
	return out
}

func v1PartToPB(p *v1Part) *pbPart {
	if p == nil {
		return &pbPart{}
	}
	out := &pbPart{Metadata: p.Metadata}
	switch p.content() {
	case partText:
		out.Text = p.Text
	case partRaw:
		inner := base64.StdEncoding.EncodeToString(*p.Raw)
		out.File = &pbFile{FileWithBytes: base64.StdEncoding.EncodeToString([]byte(inner)), MimeType: p.MediaType, Name: p.Filename}
	case partURL:
		out.File = &pbFile{FileWithURI: *p.URL, MimeType: p.MediaType, Name: p.Filename}
	case partData:
		value := *p.Data
		if isNull(value) {
			value = nil
		}
		out.Data = &pbData{Data: value}
	}
	return out
}
