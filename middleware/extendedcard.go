package middleware

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware/cardedit"
)

// The extended agent card (GetExtendedAgentCard, the card a client gets once
// authenticated) lists the extension exactly as the public card does, when the index
// can honour keys: on HTTP+JSON at GET {prefix}[/{tenant}]/extendedAgentCard, served
// as the public card is (serveCard); on JSON-RPC in the result of the call.

// extendedCardSuffix ends the HTTP+JSON path of GetExtendedAgentCard.
const extendedCardSuffix = "/extendedAgentCard"

// extendedCardMethods are the JSON-RPC methods of the extended card: A2A v1.0's and
// v0.3's.
var extendedCardMethods = []string{"GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"}

// isCardPath reports whether path is where a GET reads an agent card: the public
// card (and its legacy path) or the HTTP+JSON extended card.
func isCardPath(path string) bool {
	return path == agentCardPath || path == legacyAgentCardPath || strings.HasSuffix(path, extendedCardSuffix)
}

// isExtendedCardCall reports whether body, JSON, is a JSON-RPC call of the extended
// card. A method name spelt with escapes is not recognised: the card is then served
// as the server wrote it.
func isExtendedCardCall(body []byte) bool {
	if !bytes.Contains(body, []byte("xtended")) {
		return false
	}
	var call struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &call) == nil && slices.Contains(extendedCardMethods, call.Method)
}

// serveExtendedCardCall answers a JSON-RPC call of the extended card with the
// wrapped handler's answer, the extension listed in its result as on the public card.
func (h *handler) serveExtendedCardCall(w http.ResponseWriter, r *http.Request) {
	if !h.m.honours(r.Context()) {
		h.next.ServeHTTP(w, r)
		return
	}
	bw := &bufferWriter{header: make(http.Header)}
	h.next.ServeHTTP(bw, r)
	body := bw.buf.Bytes()
	if bw.code() == http.StatusOK && isJSON(bw.header) && bw.header.Get("Content-Encoding") == "" {
		body = h.withResultExtension(r, body)
	}
	out := w.Header()
	for k, v := range bw.header {
		out[k] = v
	}
	out.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(bw.code())
	_, _ = w.Write(body)
}

// withResultExtension returns the JSON-RPC response body with the extension listed
// in its result, the card; a body without a card result is returned as it is.
func (h *handler) withResultExtension(r *http.Request, body []byte) []byte {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil || isNull(env["result"]) {
		return body
	}
	card, outcome := cardedit.AddExtension(env["result"], idempotency.ExtensionURI, extensionEntry)
	switch outcome {
	case cardedit.Added:
		env["result"] = card
		if out, err := json.Marshal(env); err == nil {
			return out
		}
	case cardedit.Signed:
		h.warnSigned(r)
	}
	return body
}
