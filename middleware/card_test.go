package middleware_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
)

// fetchCard returns the agent card served at base, with the answer's headers.
func fetchCard(t *testing.T, hc *http.Client, base string) (*http.Response, []byte) {
	t.Helper()
	return httpDo(t, hc, "GET", base+a2asrv.WellKnownAgentCardPath, "", nil)
}

// innerCard returns the card as the wrapped handler serves it, without the middleware.
func innerCard(t *testing.T, h *mwtest.Harness) []byte {
	t.Helper()
	srv := httptest.NewServer(h.Inner)
	defer srv.Close()
	_, body := fetchCard(t, h.HTTP, srv.URL)
	return body
}

func TestAgentCardAdvertisesExtension(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{})
	resp, body := fetchCard(t, h.HTTP, h.Server.URL)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("card: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("Content-Length %d for a %d-byte card", resp.ContentLength, len(body))
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("served card does not decode as an a2a.AgentCard: %v", err)
	}
	var found *a2a.AgentExtension
	for i, e := range card.Capabilities.Extensions {
		if e.URI == idempotency.ExtensionURI {
			found = &card.Capabilities.Extensions[i]
		}
	}
	if found == nil || found.Required || found.Description == "" {
		t.Fatalf("card extensions %+v: want the idempotency extension, not required, described", card.Capabilities.Extensions)
	}
	if !strings.Contains(string(body), `"required":false`) {
		t.Fatalf("card %s: the entry should say required: false", body)
	}
	// Every other field is kept: without the entry, the card is the inner one.
	card.Capabilities.Extensions = card.Capabilities.Extensions[:len(card.Capabilities.Extensions)-1]
	var inner a2a.AgentCard
	json.Unmarshal(innerCard(t, h), &inner)
	if !reflect.DeepEqual(card, inner) {
		t.Fatalf("served card without the entry\n%+v\ndiffers from the inner card\n%+v", card, inner)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("the inner handler's headers were not kept: %v", resp.Header)
	}
}

func TestAgentCardLeftAlone(t *testing.T) {
	own := mwtest.Card()
	own.Capabilities.Extensions = append(own.Capabilities.Extensions,
		a2a.AgentExtension{URI: idempotency.ExtensionURI, Description: "the operator's words", Required: true})
	signed := mwtest.Card()
	signed.Signatures = []a2a.AgentCardSignature{{Protected: "eyJhbGciOiJFUzI1NiJ9", Signature: "c2lnbmF0dXJl"}}
	signedDeclared := mwtest.Card()
	signedDeclared.Signatures = signed.Signatures
	signedDeclared.Capabilities.Extensions = own.Capabilities.Extensions
	for _, tc := range []struct {
		name string
		cfg  mwtest.Config
		warn bool
	}{
		{"no index", mwtest.Config{NoIndex: true}, false},
		{"index cannot honour", mwtest.Config{Index: honouring{KeyIndex: failingIndex(), ok: false}}, false},
		{"operator entry", mwtest.Config{Card: a2asrv.NewStaticAgentCardHandler(own)}, false},
		{"signed card", mwtest.Config{Card: a2asrv.NewStaticAgentCardHandler(signed)}, true},
		{"signed card declaring it", mwtest.Config{Card: a2asrv.NewStaticAgentCardHandler(signedDeclared)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mwtest.New(t, tc.cfg)
			want := innerCard(t, h)
			for range 2 {
				resp, body := fetchCard(t, h.HTTP, h.Server.URL)
				if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
					t.Fatalf("served %d %s\nwant the inner card unchanged %s", resp.StatusCode, body, want)
				}
			}
			logs := h.Logs.String()
			if warned := strings.Contains(logs, "signed"); warned != tc.warn {
				t.Fatalf("logs %q: warning about the signature %v, want %v", logs, warned, tc.warn)
			}
			if tc.warn && (strings.Count(logs, "level=WARN") != 1 || !strings.Contains(logs, "before signing")) {
				t.Fatalf("logs %q: want one warning saying to declare the extension before signing", logs)
			}
		})
	}
}

// staticCard serves raw as the agent card.
func staticCard(raw string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(raw))
	})
}

// A pretty-printed v1.0 card, as a server built on encoding/json's MarshalIndent or
// a hand-written file serves it.
const prettyCard = `{
  "name": "Pretty",
  "description": "pretty-printed",
  "supportedInterfaces": [
    {
      "url": "http://127.0.0.1/jsonrpc",
      "protocolBinding": "JSONRPC",
      "protocolVersion": "1.0"
    }
  ],
  "version": "1",
  "capabilities": {
    "streaming": true,
    "extensions": [
      {
        "uri": "https://example.com/ext/geo/v1",
        "description": "geo"
      }
    ]
  },
  "defaultInputModes": ["text/plain"],
  "defaultOutputModes": ["text/plain"],
  "skills": []
}
`

// A v0.3 card, in the shape a2a-go v0.3.x's static handler writes it: top-level
// url, protocolVersion, preferredTransport and additionalInterfaces.
const v03Card = `{"additionalInterfaces":[{"transport":"JSONRPC","url":"http://127.0.0.1/v03/jsonrpc"}],` +
	`"capabilities":{"pushNotifications":false,"streaming":true},"defaultInputModes":["text/plain"],` +
	`"defaultOutputModes":["text/plain"],"description":"v0.3 agent","name":"Legacy","preferredTransport":"JSONRPC",` +
	`"protocolVersion":"0.3.0","skills":[],"url":"http://127.0.0.1/v03/jsonrpc","version":"1"}`

// The card served is the card the wrapped handler wrote, byte for byte, but for
// the extension's entry, in every shape of card: delete the entry and the rest is
// the inner card.
func TestAgentCardOnlyInsertsTheEntry(t *testing.T) {
	e := mwtest.CardEntry()
	dynamic := a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		card := mwtest.Card()
		card.Name = "Dynamic"
		card.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface("http://127.0.0.1/jsonrpc", a2a.TransportProtocolJSONRPC)}
		return card, nil
	}))
	bare := mwtest.Card()
	bare.Capabilities = a2a.AgentCapabilities{}
	for _, tc := range []struct {
		name    string
		card    http.Handler
		path    string
		removed string
		added   string
	}{
		{"a2a-go static handler", a2asrv.NewStaticAgentCardHandler(mwtest.Card()), "", "", "[" + e + "]"},
		{"a2a-go dynamic handler", dynamic, "", "", "[" + e + "]"},
		{"a2a-go static handler, no extensions", a2asrv.NewStaticAgentCardHandler(bare), "", "", `{"extensions":[` + e + `]}`},
		{"pretty-printed", staticCard(prettyCard), "", "", "[" + e + "]"},
		{"unknown members", staticCard(`{"name":"X","x-vendor":{"capabilities":{"extensions":[]}},"capabilities":{"x-flag":[true,{"a":null}],"extensions":[{"uri":"a","x-note":"]}"}]},"x-tail":1}`), "", "", "[" + e + "]"},
		{"no capabilities", staticCard(`{"name":"Bare","description":"no capabilities","version":"1","skills":[],"x-custom":{"keep":[1,2]}}`), "", "", `{"capabilities":{"extensions":[` + e + `]}}`},
		{"null capabilities", staticCard(`{"name":"Bare","capabilities":null,"skills":[]}`), "", "null", `[{"extensions":[` + e + `]}]`},
		{"duplicate capabilities", staticCard(`{"capabilities":{"extensions":[{"uri":"a"}]},"name":"Dup","Capabilities":{"extensions":[{"uri":"b"}]}}`), "", "", "[" + e + "]"},
		{"v0.3 card at agent.json", staticCard(v03Card), mwtest.LegacyCardPath, "", `{"extensions":[` + e + `]}`},
		{"v0.3 card at agent-card.json", staticCard(v03Card), "", "", `{"extensions":[` + e + `]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := mwtest.New(t, mwtest.Config{Card: tc.card})
			mwtest.CheckCardInsert(t, h, cmp.Or(tc.path, a2asrv.WellKnownAgentCardPath), tc.removed, tc.added)
		})
	}
}

// etagCard serves card the way a server that validates its card does (the
// JavaScript SDK's, or net/http's file server): with an ETag, Last-Modified and
// Cache-Control, answering If-None-Match and If-Modified-Since itself. It counts
// the requests that reached it with a validator.
type etagCard struct {
	card        atomic.Pointer[string]
	etag        atomic.Pointer[string]
	conditional atomic.Int32
}

var cardModified = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func (c *etagCard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		c.conditional.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", *c.etag.Load())
	w.Header().Set("Cache-Control", "public, max-age=60")
	http.ServeContent(w, r, "", cardModified, strings.NewReader(*c.card.Load()))
}

func newETagCard(card, etag string) *etagCard {
	c := &etagCard{}
	c.card.Store(&card)
	c.etag.Store(&etag)
	return c
}

// Conditional requests for a card the middleware changed: the upstream's
// validators never get a 304 for it; its own strong ETag does; HEAD answers as
// GET does without the body; Cache-Control passes through.
func TestAgentCardConditionalRequests(t *testing.T) {
	upstream := newETagCard(`{"name":"Validated","capabilities":{"streaming":true}}`, `"v1"`)
	h := mwtest.New(t, mwtest.Config{Card: upstream})
	url := h.Server.URL + a2asrv.WellKnownAgentCardPath
	get := func(method string, header http.Header) (*http.Response, []byte) {
		t.Helper()
		return httpDo(t, h.HTTP, method, url, "", header)
	}
	resp, card := get("GET", nil)
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(card), idempotency.ExtensionURI) {
		t.Fatalf("%d %s", resp.StatusCode, card)
	}
	if etag == "" || etag == `"v1"` || strings.HasPrefix(etag, "W/") || resp.Header.Get("Cache-Control") != "public, max-age=60" ||
		resp.Header.Get("Last-Modified") == "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(card)) {
		t.Fatalf("headers %v: want a strong ETag of the served card, the upstream's Cache-Control, Last-Modified, and the served length", resp.Header)
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"upstream ETag", http.Header{"If-None-Match": {`"v1"`}}, http.StatusOK},
		{"upstream weak ETag", http.Header{"If-None-Match": {`W/"v1"`}}, http.StatusOK},
		{"upstream ETag among others", http.Header{"If-None-Match": {`"x", "v1"`}}, http.StatusOK},
		{"If-Modified-Since", http.Header{"If-Modified-Since": {cardModified.Add(time.Hour).Format(http.TimeFormat)}}, http.StatusOK},
		{"served ETag", http.Header{"If-None-Match": {etag}}, http.StatusNotModified},
		{"served ETag, weakly", http.Header{"If-None-Match": {`"x", W/` + etag}}, http.StatusNotModified},
		{"served ETag and If-Modified-Since", http.Header{"If-None-Match": {etag}, "If-Modified-Since": {cardModified.Add(-time.Hour).Format(http.TimeFormat)}}, http.StatusNotModified},
		{"any", http.Header{"If-None-Match": {"*"}}, http.StatusNotModified},
		{"a range of the upstream's bytes", http.Header{"Range": {"bytes=0-9"}, "If-Range": {`"v1"`}}, http.StatusOK},
	} {
		for _, method := range []string{"GET", "HEAD"} {
			resp, body := get(method, tc.header)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: %d, want %d", method, tc.name, resp.StatusCode, tc.want)
			}
			if resp.Header.Get("ETag") != etag || resp.Header.Get("Cache-Control") != "public, max-age=60" {
				t.Fatalf("%s %s: headers %v", method, tc.name, resp.Header)
			}
			switch {
			case tc.want == http.StatusNotModified && len(body) != 0:
				t.Fatalf("%s %s: 304 with a body %s", method, tc.name, body)
			case tc.want == http.StatusOK && method == "GET" && !bytes.Equal(body, card):
				t.Fatalf("%s %s: %s, want the served card %s", method, tc.name, body, card)
			case tc.want == http.StatusOK && method == "HEAD" && (len(body) != 0 || resp.ContentLength != int64(len(card))):
				t.Fatalf("HEAD %s: body %q, Content-Length %d, want none and %d", tc.name, body, resp.ContentLength, len(card))
			}
		}
	}
	if n := upstream.conditional.Load(); n != 0 {
		t.Fatalf("%d card requests reached the upstream with a validator", n)
	}

	// The upstream's card changes: so do the served card and its ETag, and the old
	// ETag gets the new card.
	next := `{"name":"Validated","capabilities":{"streaming":false}}`
	upstream.card.Store(&next)
	v2 := `"v2"`
	upstream.etag.Store(&v2)
	resp, body := get("GET", http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusOK || bytes.Equal(body, card) || resp.Header.Get("ETag") == etag {
		t.Fatalf("after the upstream's change: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// A card the middleware leaves alone keeps the upstream's validators, and
// conditional requests for it answer as the upstream would.
func TestAgentCardConditionalRequestsUnchanged(t *testing.T) {
	signed := `{"name":"Signed","capabilities":{},"signatures":[{"protected":"eyJhbGciOiJFUzI1NiJ9","signature":"c2ln"}]}`
	for _, tc := range []struct {
		name string
		cfg  mwtest.Config
	}{
		{"index cannot honour", mwtest.Config{Index: honouring{KeyIndex: failingIndex(), ok: false}}},
		{"signed card", mwtest.Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Card = newETagCard(signed, `"v1"`)
			h := mwtest.New(t, tc.cfg)
			url := h.Server.URL + a2asrv.WellKnownAgentCardPath
			for _, c := range []struct {
				header http.Header
				want   int
			}{
				{nil, http.StatusOK},
				{http.Header{"If-None-Match": {`"v1"`}}, http.StatusNotModified},
				{http.Header{"If-None-Match": {`"v0"`}}, http.StatusOK},
				{http.Header{"If-Modified-Since": {cardModified.Format(http.TimeFormat)}}, http.StatusNotModified},
				{http.Header{"If-Modified-Since": {cardModified.Add(-time.Second).Format(http.TimeFormat)}}, http.StatusOK},
			} {
				resp, body := httpDo(t, h.HTTP, "GET", url, "", c.header)
				if resp.StatusCode != c.want || resp.Header.Get("ETag") != `"v1"` || c.want == http.StatusOK && string(body) != signed {
					t.Fatalf("%v: %d %v %s, want %d and the card as it is", c.header, resp.StatusCode, resp.Header, body, c.want)
				}
			}
		})
	}
}

// An ETag set in the header map under a name Get does not find is replaced too.
func TestAgentCardRawETagHeader(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{Card: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["ETag"] = []string{`"v1"`}
		w.Header()["Content-Type"] = []string{"application/json"}
		io.WriteString(w, `{"name":"Raw"}`)
	})})
	resp, card := fetchCard(t, h.HTTP, h.Server.URL)
	if etag := resp.Header.Values("ETag"); len(etag) != 1 || etag[0] == `"v1"` || !strings.Contains(string(card), idempotency.ExtensionURI) {
		t.Fatalf("ETag %q for %s: want one, of the served card", etag, card)
	}
}

// A server that sends no ETag gets none added.
func TestAgentCardNoETag(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{})
	resp, card := fetchCard(t, h.HTTP, h.Server.URL)
	if resp.Header.Get("ETag") != "" || !strings.Contains(string(card), idempotency.ExtensionURI) {
		t.Fatalf("%v %s", resp.Header, card)
	}
	resp, body := httpDo(t, h.HTTP, "HEAD", h.Server.URL+a2asrv.WellKnownAgentCardPath, "", nil)
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.ContentLength != int64(len(card)) {
		t.Fatalf("HEAD: %d, %d bytes, Content-Length %d; want 200, none, %d", resp.StatusCode, len(body), resp.ContentLength, len(card))
	}
}
