package mwtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
)

// CardEntry returns the extension's entry the middleware inserts in a card, as
// compact JSON.
func CardEntry() string {
	var entry bytes.Buffer
	json.Compact(&entry, []byte(`{"uri":"`+idempotency.ExtensionURI+`","description":"`+
		`Idempotent sends: a message whose metadata carries `+idempotency.MetadataKey+` runs the agent once per key; `+
		`a retry with the same key and message gets the first attempt's task or reply.","required":false}`))
	return entry.String()
}

// CheckCardInsert fails t unless the card h serves at path is the card its wrapped
// handler writes, byte for byte, but for removed replaced by added (what inserted
// returns), with a Content-Length of its own size, and with the extension's entry
// last in the extensions a Go client reads.
func CheckCardInsert(t *testing.T, h *Harness, path, removed, added string) {
	t.Helper()
	resp, served := Get(t, h.HTTP, h.Server.URL+path)
	inner := httptest.NewServer(h.Inner)
	defer inner.Close()
	_, want := Get(t, h.HTTP, inner.URL+path)
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(served)) {
		t.Fatalf("%d, Content-Length %d for %d bytes", resp.StatusCode, resp.ContentLength, len(served))
	}
	if gotRemoved, gotAdded := inserted(t, want, served); gotRemoved != removed || gotAdded != added {
		t.Fatalf("served card %s\nreplaced %q of the inner card %s\nwith %s\nwant %q replaced with %s", served, gotRemoved, want, gotAdded, removed, added)
	}
	// A Go client reads the entry, last, in the extensions it reads.
	var card a2a.AgentCard
	if err := json.Unmarshal(served, &card); err != nil {
		t.Fatal(err)
	}
	exts := card.Capabilities.Extensions
	if len(exts) == 0 || exts[len(exts)-1].URI != idempotency.ExtensionURI || exts[len(exts)-1].Required {
		t.Fatalf("a Go client reads extensions %+v", exts)
	}
}

// inserted splits served against inner, the card the wrapped handler wrote: it
// returns what of inner was replaced (nothing, or a null) and what was put in its
// place, compacted and wrapped so it reads as JSON: ["an element"] or {"a":"member"}.
func inserted(t *testing.T, inner, served []byte) (removed, added string) {
	t.Helper()
	p := 0
	for p < len(inner) && p < len(served) && inner[p] == served[p] {
		p++
	}
	s := 0
	for s < len(inner)-p && s < len(served)-p && inner[len(inner)-1-s] == served[len(served)-1-s] {
		s++
	}
	mid := strings.TrimPrefix(strings.TrimSpace(string(served[p:len(served)-s])), ",")
	for _, wrap := range []string{"[]", "{}"} {
		var b bytes.Buffer
		if json.Compact(&b, []byte(wrap[:1]+mid+wrap[1:])) == nil {
			return string(inner[p : len(inner)-s]), b.String()
		}
	}
	t.Fatalf("served card %s\ndiffers from the inner card %s\nby %q, which is not JSON", served, inner, mid)
	return "", ""
}

// Get fetches url with hc and returns the response with its body.
func Get(t *testing.T, hc *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}
