package middleware

import (
	"bytes"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware/internal/seam"
)

// The request types below mirror the fields of a2a-go's a2a.SendMessageRequest,
// a2a.SendMessageConfig and a2a.Message (a2a/core.go, v2.4.0) that the middleware
// needs, with the same Go types, the same json tags and the same pointers, and are
// decoded with encoding/json as a2a-go decodes them. (sendConfig and message, package
// seam's types, are also those of other versions' params: v0.3's JSON-RPC binding's.)
// So they read what the server behind reads: keys matched
// case-insensitively, the last of duplicate keys winning, a repeated object merged
// into the one before it, JSON null resetting a pointer. Leaving fields out can only
// make decoding succeed where a2a-go's fails (a bad "parts" value), never the
// reverse; such a send is refused by the server before anything runs.
// FuzzRequestReader holds the reader to this.

// sendParams mirrors a2a.SendMessageRequest.
type sendParams struct {
	Tenant  string      `json:"tenant,omitempty"`
	Config  *sendConfig `json:"configuration,omitempty"`
	Message *message    `json:"message"`
}

// sendConfig mirrors a2a.SendMessageConfig, and message a2a.Message: the types are
// package seam's, so that a dialect of another version decodes into them too.
type (
	sendConfig = seam.Config
	message    = seam.Message
)

// fill copies what the core needs from p into s.
func (p *sendParams) fill(s *send) {
	s.tenant = p.Tenant
	fillSend(s, p.Config, p.Message)
}

// fillSend copies what the core needs from a send's configuration c and message m
// (either may be nil) into s.
func fillSend(s *send, c *sendConfig, m *message) {
	if c != nil {
		s.historyLength = c.HistoryLength
	}
	if m == nil {
		return
	}
	s.hasMessage = true
	s.messageID = m.ID
	s.taskID = m.TaskID
	key, ok, err := idempotency.KeyOf(m.Metadata)
	s.keyed = ok || err != nil
	s.key, s.keyErr = key, err
}

// takeHeaderKey decides s's key from both carriers, the message's metadata (read
// already) and header, the values of the Idempotency-Key request header, by
// idempotency.KeyOfSend. A reading without a message is left alone: it is no send.
func (s *send) takeHeaderKey(header []string) {
	if s == nil || !s.hasMessage || len(header) == 0 {
		return
	}
	key, ok, err := idempotency.KeyOfSend(s.key, s.keyErr, header)
	s.keyed = ok || err != nil
	s.key, s.keyErr = key, err
}

// keyName is the metadata name of the key, as it appears in a body that spells it
// without escapes.
var keyName = []byte(idempotency.MetadataKey)

// mayCarryKey reports whether body can name the idempotency key in a message's
// metadata. A JSON string can spell the name only literally or with the escapes \u
// and \/ (the others stand for characters the name does not contain), so a body with
// neither the literal name nor those escapes carries no key, and the middleware
// passes it on without parsing it.
func mayCarryKey(body []byte) bool {
	return bytes.Contains(body, keyName) ||
		bytes.IndexByte(body, '\\') >= 0 && (bytes.Contains(body, []byte(`\u`)) || bytes.Contains(body, []byte(`\/`)))
}
