package middleware

import (
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strconv"

	"github.com/a2akit/idempotency"
)

// extensionDescription is the description of the extension in the agent card.
const extensionDescription = "Idempotent sends: a message whose metadata carries " + idempotency.MetadataKey +
	" runs the agent once per key; a retry with the same key and message gets the first attempt's task or reply."

// serveCard serves the agent card of the wrapped handler, with the extension listed
// in capabilities.extensions when the index can honour keys.
func (h *handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if !h.m.honours(r.Context()) {
		h.next.ServeHTTP(w, r)
		return
	}
	bw := &bufferWriter{header: make(http.Header)}
	h.next.ServeHTTP(bw, r)
	body := bw.buf.Bytes()
	if bw.code() == http.StatusOK && isJSON(bw.header) && bw.header.Get("Content-Encoding") == "" {
		card, signed := advertise(body)
		switch {
		case card != nil:
			body = card
		case signed && h.m.signedWarned.CompareAndSwap(false, true):
			h.m.log.LogAttrs(r.Context(), slog.LevelWarn, "idempotency: the agent card is signed and does not declare "+
				"the idempotency extension, so it is served unchanged (appending the extension would break its "+
				"signature); declare "+idempotency.ExtensionURI+" in capabilities.extensions before signing the card")
		}
	}
	out := w.Header()
	for k, v := range bw.header {
		out[k] = v
	}
	if out.Get("Content-Length") != "" || bw.code() == http.StatusOK {
		out.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(bw.code())
	_, _ = w.Write(body)
}

// isJSON reports whether h declares a JSON body.
func isJSON(h http.Header) bool {
	t, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return t == "application/json" || t == "application/a2a+json"
}

// advertise returns card with the extension added to capabilities.extensions, every
// other field kept, or nil when the card stays as it is: it is not a JSON object, it
// already lists the extension (an operator's own entry is left alone), or it is
// signed (signed reports that case).
func advertise(card []byte) (out []byte, signed bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(card, &fields) != nil || fields == nil {
		return nil, false
	}
	caps := map[string]json.RawMessage{}
	if raw, ok := fields["capabilities"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &caps) != nil || caps == nil {
			return nil, false
		}
	}
	var exts []json.RawMessage
	if raw, ok := caps["extensions"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &exts) != nil {
			return nil, false
		}
	}
	for _, e := range exts {
		var ext struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(e, &ext) == nil && ext.URI == idempotency.ExtensionURI {
			return nil, false
		}
	}
	var sigs []json.RawMessage
	if raw, ok := fields["signatures"]; ok && json.Unmarshal(raw, &sigs) == nil && len(sigs) > 0 {
		return nil, true
	}
	entry, _ := json.Marshal(struct {
		URI         string `json:"uri"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	}{idempotency.ExtensionURI, extensionDescription, false})
	caps["extensions"], _ = json.Marshal(append(exts, entry))
	fields["capabilities"], _ = json.Marshal(caps)
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, false
	}
	return out, false
}
