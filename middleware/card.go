package middleware

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware/cardedit"
)

// ExtensionDescription is the description of the extension in the agent cards the
// kit serves: the public card, and the extended card on every binding.
const ExtensionDescription = "Idempotent sends: a message whose metadata carries " + idempotency.MetadataKey +
	" runs the agent once per key; a retry with the same key and message gets the first attempt's task or reply."

// extensionEntry is the entry the middleware adds to capabilities.extensions.
var extensionEntry, _ = json.Marshal(struct {
	URI         string `json:"uri"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}{idempotency.ExtensionURI, ExtensionDescription, false})

// serveCard serves the agent card of the wrapped handler (to a GET or a HEAD), with
// the extension listed in capabilities.extensions when the index can honour keys.
//
// The wrapped handler is asked for the whole card, by a GET without the request's
// validators (If-None-Match, If-Modified-Since) and ranges: they name the card it
// serves, not the one served here, which is always served whole. The middleware answers them itself. A card it changed gets
// a strong ETag of its own bytes in place of the wrapped handler's, when that sent
// one, and 304 only to an If-None-Match naming that ETag; a card it leaves alone
// keeps the wrapped handler's validators, which it compares as the handler would.
func (h *handler) serveCard(w http.ResponseWriter, r *http.Request) {
	if !h.m.honours(r.Context()) {
		h.next.ServeHTTP(w, r)
		return
	}
	in := r.Clone(r.Context())
	in.Method = http.MethodGet
	for _, k := range []string{"If-None-Match", "If-Modified-Since", "Range", "If-Range"} {
		in.Header.Del(k)
	}
	bw := &bufferWriter{header: make(http.Header)}
	h.next.ServeHTTP(bw, in)
	body := bw.buf.Bytes()
	out := w.Header()
	for k, v := range bw.header {
		out[http.CanonicalHeaderKey(k)] = v // found by Get and Set even when written as "ETag"
	}
	if bw.code() != http.StatusOK {
		writeCard(w, r, bw.code(), body)
		return
	}
	changed := false
	if isJSON(bw.header) && bw.header.Get("Content-Encoding") == "" {
		if !strings.HasSuffix(r.URL.Path, extendedCardSuffix) {
			h.m.early.sawCard(body)
			if h.m.learnRoutes {
				h.m.routes.LearnCard(body, "")
			}
		}
		card, outcome := cardedit.AddExtension(body, idempotency.ExtensionURI, extensionEntry)
		switch {
		case outcome == cardedit.Added:
			body, changed = card, true
			if out.Get("Etag") != "" {
				out.Set("Etag", strongETag(body))
			}
		case outcome == cardedit.Signed:
			h.warnSigned(r)
		}
	}
	if notModified(r, out, changed) {
		// As net/http's own file server answers: the validators, without the body's headers.
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding"} {
			out.Del(k)
		}
		if out.Get("Etag") != "" {
			out.Del("Last-Modified")
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeCard(w, r, http.StatusOK, body)
}

// warnSigned logs, once, that a signed card that does not declare the extension is
// served unchanged.
func (h *handler) warnSigned(r *http.Request) {
	if h.m.signedWarned.CompareAndSwap(false, true) {
		h.m.log.LogAttrs(r.Context(), slog.LevelWarn, "idempotency: the agent card is signed and does not declare "+
			"the idempotency extension, so it is served unchanged (appending the extension would break its "+
			"signature); declare "+idempotency.ExtensionURI+" in capabilities.extensions before signing the card")
	}
}

// writeCard writes the card's answer, its body left out for a HEAD.
func writeCard(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	if w.Header().Get("Content-Length") != "" || code == http.StatusOK {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// strongETag is the strong entity tag of a card the middleware changed.
func strongETag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
}

// notModified reports whether r's validators match the card about to be served
// with header h (RFC 9110 §13.1.2, §13.1.3): If-None-Match by weak comparison with
// its ETag, or, without If-None-Match, If-Modified-Since against its Last-Modified.
// The latter names the wrapped handler's card, so it is not compared with a card
// the middleware changed: that card can change (the extension comes and goes with
// the index) while the handler's stays as it was.
func notModified(r *http.Request, h http.Header, changed bool) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		etag := strings.TrimPrefix(h.Get("Etag"), "W/")
		for tag := range strings.SplitSeq(inm, ",") {
			if tag = strings.TrimSpace(tag); tag == "*" || etag != "" && strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
		return false
	}
	if changed {
		return false
	}
	since, err := http.ParseTime(r.Header.Get("If-Modified-Since"))
	if err != nil {
		return false
	}
	modified, err := http.ParseTime(h.Get("Last-Modified"))
	return err == nil && !modified.Truncate(time.Second).After(since)
}

// isJSON reports whether h declares a JSON body.
func isJSON(h http.Header) bool {
	t, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return t == "application/json" || t == "application/a2a+json"
}
