package middleware_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
)

// fetchCard returns the agent card served at base, with the answer's headers.
func fetchCard(t *testing.T, hc *http.Client, base string) (*http.Response, []byte) {
	t.Helper()
	return httpDo(t, hc, "GET", base+a2asrv.WellKnownAgentCardPath, "", nil)
}

// innerCard returns the card as the wrapped handler serves it, without the middleware.
func innerCard(t *testing.T, h *harness) []byte {
	t.Helper()
	srv := httptest.NewServer(h.inner)
	defer srv.Close()
	_, body := fetchCard(t, h.hc, srv.URL)
	return body
}

func TestAgentCardAdvertisesExtension(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	resp, body := fetchCard(t, h.hc, h.srv.URL)
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

// A card without capabilities.extensions (or without capabilities) gets them.
func TestAgentCardCreatesExtensions(t *testing.T) {
	raw := `{"name":"Bare","description":"no capabilities","version":"1","skills":[],"x-custom":{"keep":[1,2]}}`
	h := newHarness(t, harnessConfig{card: staticCard(raw)})
	_, body := fetchCard(t, h.hc, h.srv.URL)
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	exts := got["capabilities"].(map[string]any)["extensions"].([]any)
	if len(exts) != 1 || exts[0].(map[string]any)["uri"] != idempotency.ExtensionURI {
		t.Fatalf("card %s", body)
	}
	if !reflect.DeepEqual(got["x-custom"], map[string]any{"keep": []any{1.0, 2.0}}) || got["name"] != "Bare" {
		t.Fatalf("card %s lost fields", body)
	}
}

func TestAgentCardLeftAlone(t *testing.T) {
	own := testCard()
	own.Capabilities.Extensions = append(own.Capabilities.Extensions,
		a2a.AgentExtension{URI: idempotency.ExtensionURI, Description: "the operator's words", Required: true})
	signed := testCard()
	signed.Signatures = []a2a.AgentCardSignature{{Protected: "eyJhbGciOiJFUzI1NiJ9", Signature: "c2lnbmF0dXJl"}}
	signedDeclared := testCard()
	signedDeclared.Signatures = signed.Signatures
	signedDeclared.Capabilities.Extensions = own.Capabilities.Extensions
	for _, tc := range []struct {
		name string
		cfg  harnessConfig
		warn bool
	}{
		{"no index", harnessConfig{noIndex: true}, false},
		{"index cannot honour", harnessConfig{index: honouring{KeyIndex: failingIndex{}, ok: false}}, false},
		{"operator entry", harnessConfig{card: a2asrv.NewStaticAgentCardHandler(own)}, false},
		{"signed card", harnessConfig{card: a2asrv.NewStaticAgentCardHandler(signed)}, true},
		{"signed card declaring it", harnessConfig{card: a2asrv.NewStaticAgentCardHandler(signedDeclared)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			want := innerCard(t, h)
			for range 2 {
				resp, body := fetchCard(t, h.hc, h.srv.URL)
				if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
					t.Fatalf("served %d %s\nwant the inner card unchanged %s", resp.StatusCode, body, want)
				}
			}
			logs := h.logs.String()
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
