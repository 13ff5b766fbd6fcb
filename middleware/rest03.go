package middleware

import (
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/v03/pbjson"
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

func (rest03) sendAnswer(status int, body []byte) Produced {
	if status < 200 || status > 299 {
		return restErrorAnswer(status, body)
	}
	return pbAnswer(body)
}

func (rest03) eventAnswer(data []byte) Produced {
	if f := eventError(data); f != nil {
		return Produced{Refused: f.refuses, fail: f}
	}
	return pbAnswer(data)
}

// pbAnswer reads a v0.3 SendMessageResponse or StreamResponse, with the message of a
// reply converted to v1.0.
func pbAnswer(raw []byte) Produced {
	v, ok := readStreamMembers(raw)
	if !ok {
		return Produced{}
	}
	out := v.answer()
	if out.Reply != nil {
		msg, err := pbjson.MessageToV1(out.Reply)
		if err != nil {
			return Produced{}
		}
		out.Reply = msg
	}
	return out
}

func (rest03) eventTask(data []byte) ([]byte, bool) {
	raw, ok := streamResponseTask(data)
	if !ok {
		return nil, false
	}
	task, err := pbjson.TaskToV1(raw)
	return task, err == nil
}

func (rest03) product(_ *send, res product) ([]byte, error) {
	var out product
	var err error
	if res.message != nil {
		out.message, err = pbjson.MessageFromV1(res.message)
	} else {
		out.task, err = pbjson.TaskFromV1(res.task)
	}
	if err != nil {
		return nil, err
	}
	return append(streamResponse(out), '\n'), nil
}

func (rest03) failure(_ *send, f *failure) (int, []byte, bool) { return restFailure(f) }

func (rest03) taskRequest(r *http.Request, s *send, taskID string) *http.Request {
	return restTaskRequest(r, s, taskID)
}

func (rest03) taskAnswer(status int, body []byte) ([]byte, *failure) {
	raw, f := restTaskAnswer(status, body)
	if f != nil {
		return nil, f
	}
	task, err := pbjson.TaskToV1(raw)
	if err != nil {
		return nil, taskUnframable(err)
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
