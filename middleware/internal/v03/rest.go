package v03

import (
	"encoding/json"
	"net/http"

	"github.com/a2akit/idempotency/middleware/internal/seam"
	"github.com/a2akit/idempotency/middleware/internal/v03/pbjson"
)

// rest is the HTTP+JSON binding of A2A v0.3, as a2a-go's
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
//
// Everything but the bodies' objects and the verb of a subscription is framed as
// v1.0's HTTP+JSON binding frames it, so rest is v1.0's dialect (seam.Engine.HTTPJSON)
// with pbjson's conversions at its edges.
type rest struct{ e seam.Engine }

// restPrefix is the path segment a2a-go's v0.3 handler serves every route under
// (a2av0.RESTPathPrefix).
const restPrefix = "/v1"

func (rest) Version() string { return Version }
func (rest) Prefix() string  { return restPrefix }

// restParams mirrors a2a-go's pbjson.SendMessageRequest (a2apb/v0/pbjson, the
// fields the middleware needs, with the same types and tags), which a2av0's handler
// decodes the whole body into with json.Unmarshal: no trailing bytes, and a
// historyLength that is an int32 whose 0 means absent.
type restParams struct {
	Config  *restConfig  `json:"configuration,omitempty"`
	Message *restMessage `json:"message,omitempty"`
}

// restConfig mirrors pbjson.SendMessageConfiguration.
type restConfig struct {
	HistoryLength int32 `json:"historyLength,omitempty"`
}

// restMessage mirrors pbjson.Message. Content is kept raw: only its presence is
// read, to tell a v0.3 message from a v1.0 one.
type restMessage struct {
	ID       string          `json:"messageId,omitempty"`
	TaskID   string          `json:"taskId,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// ReadSend reads body as a v0.3 send, as a2av0 decodes it, and reports whether it
// does: false too for a message without content, which is v1.0's.
func (rest) ReadSend(body []byte) (seam.Params, bool) {
	var p restParams
	if err := json.Unmarshal(body, &p); err != nil {
		return seam.Params{}, false
	}
	if p.Message == nil || isNull(p.Message.Content) {
		return seam.Params{}, false // not a v0.3 message: v1.0's binding reads it
	}
	var c *seam.Config
	if p.Config != nil && p.Config.HistoryLength != 0 {
		n := int(p.Config.HistoryLength)
		c = &seam.Config{HistoryLength: &n}
	}
	return seam.Params{Config: c, Message: &seam.Message{ID: p.Message.ID, Metadata: p.Message.Metadata, TaskID: p.Message.TaskID}}, true
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

func (b rest) SendAnswer(status int, body []byte) seam.Answer {
	return replyToV1(b.e.HTTPJSON().SendAnswer(status, body))
}

func (b rest) EventAnswer(data []byte) seam.Answer {
	return replyToV1(b.e.HTTPJSON().EventAnswer(data))
}

// replyToV1 converts the Message reply of a v0.3 SendMessageResponse or
// StreamResponse, which v1.0's reading of the members passes on as it is, to v1.0.
func replyToV1(out seam.Answer) seam.Answer {
	if out.Reply != nil {
		msg, err := pbjson.MessageToV1(out.Reply)
		if err != nil {
			return seam.Answer{}
		}
		out.Reply = msg
	}
	return out
}

func (b rest) EventTask(data []byte) ([]byte, bool) {
	raw, ok := b.e.HTTPJSON().EventTask(data)
	if !ok {
		return nil, false
	}
	task, err := pbjson.TaskToV1(raw)
	return task, err == nil
}

func (b rest) Product(s seam.Send, res seam.Product) ([]byte, error) {
	var out seam.Product
	var err error
	if res.Message != nil {
		out.Message, err = pbjson.MessageFromV1(res.Message)
	} else {
		out.Task, err = pbjson.TaskFromV1(res.Task)
	}
	if err != nil {
		return nil, err
	}
	return b.e.HTTPJSON().Product(s, out)
}

func (b rest) Failure(s seam.Send, f seam.Failure) (int, []byte, bool) {
	return b.e.HTTPJSON().Failure(s, f)
}

func (b rest) TaskRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	return b.e.HTTPJSON().TaskRequest(r, s, taskID)
}

func (b rest) TaskAnswer(status int, body []byte) ([]byte, seam.Failure) {
	raw, f := b.e.HTTPJSON().TaskAnswer(status, body)
	return taskToV1(b.e, raw, f, pbjson.TaskToV1)
}

// SubscribeRequest subscribes with GET, as v0.3's proto maps the call and as a2a-go's
// v0.3 client does (a2av0's handler takes POST too, which v1.0's uses).
func (b rest) SubscribeRequest(r *http.Request, s seam.Send, taskID string) *http.Request {
	req := b.e.HTTPJSON().SubscribeRequest(r, s, taskID)
	req.Method = http.MethodGet
	return req
}
