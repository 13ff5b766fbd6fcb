package middleware

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// errNoContent refuses a keyed send whose message the content check cannot read.
var errNoContent = errors.New("the keyed send's message cannot be read as a JSON object; send a well-formed message")

// MessageFingerprint returns the digest of an A2A message's content that
// [Options.CheckContent] compares: its parts, role, contextId, taskId and
// referenceTaskIds, as canonical JSON (object keys sorted, white space and number
// spelling normalised, absent, null and empty values counted alike, role "user" and
// "ROLE_USER" alike, a v0.3 part's "kind" left out), so that a message re-encoded by
// another client or binding has the same fingerprint (a v0.3 file part, shaped
// otherwise than v1.0's, does not meet its v1.0 form). message is the message as A2A v1.0 JSON (the proto JSON mapping,
// which gRPC bindings get with protojson); its messageId, metadata (which carries
// the key) and extensions are not part of it. Object keys are matched as Go's
// encoding/json matches them: case-insensitively, the last duplicate winning. The
// fingerprint is 43 bytes, whatever the message's size.
func MessageFingerprint(message []byte) (string, error) {
	var m struct {
		Parts            any `json:"parts"`
		Role             any `json:"role"`
		ContextID        any `json:"contextId"`
		TaskID           any `json:"taskId"`
		ReferenceTaskIDs any `json:"referenceTaskIds"`
	}
	if err := json.Unmarshal(message, &m); err != nil {
		return "", errNoContent
	}
	if r, ok := m.Role.(string); ok {
		m.Role = strings.TrimPrefix(strings.ToLower(r), "role_")
	}
	if parts, ok := m.Parts.([]any); ok {
		for _, p := range parts {
			if p, ok := p.(map[string]any); ok {
				delete(p, "kind") // A2A v0.3's part discriminator; v1.0 has none
			}
		}
	}
	canon, err := json.Marshal(pruneEmpty(map[string]any{
		"parts": m.Parts, "role": m.Role, "contextId": m.ContextID, "taskId": m.TaskID, "referenceTaskIds": m.ReferenceTaskIDs,
	}))
	if err != nil {
		return "", errNoContent
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// pruneEmpty returns v without the object members whose values are null, "", [] or
// {} (after pruning), at every depth: encoders differ in which of them they write.
func pruneEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e = pruneEmpty(e); isEmpty(e) {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
	case []any:
		for i, e := range v {
			v[i] = pruneEmpty(e)
		}
	}
	return v
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// bodyFingerprint returns the fingerprint of the message of a send's body: the
// params.message of a JSON-RPC call, or the message of an HTTP+JSON send. It decodes
// the body a second time, only when Options.CheckContent is on.
func bodyFingerprint(body []byte, jsonrpc bool) (string, error) {
	var call struct {
		Params struct {
			Message json.RawMessage `json:"message"`
		} `json:"params"`
	}
	var rest struct {
		Message json.RawMessage `json:"message"`
	}
	err, msg := json.Unmarshal(body, &rest), &rest.Message
	if jsonrpc {
		err, msg = json.Unmarshal(body, &call), &call.Params.Message
	}
	if err != nil {
		return "", errNoContent
	}
	return MessageFingerprint(*msg)
}
