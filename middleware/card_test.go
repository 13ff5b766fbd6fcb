package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	legacya2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
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

// The card of a server that also speaks A2A v0.3, as a2av0's compatibility producer
// serves it (v1.0's card joined with v0.3's top-level url, protocolVersion and
// preferredTransport), gets the extension at the same place, at v0.3's well-known
// path and at the older agent.json; a v0.3 client that resolves the card sees the
// extension, and its keyed sends through the card's interface are deduplicated.
func TestAgentCardV03(t *testing.T) {
	var base atomic.Pointer[string]
	producer := a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		card := testCard()
		card.SupportedInterfaces = []*a2a.AgentInterface{
			{URL: *base.Load() + jsonrpc03Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		}
		return card, nil
	})
	h := newHarness(t, harnessConfig{card: a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(producer))})
	base.Store(&h.srv.URL)
	srv := httptest.NewServer(h.inner)
	defer srv.Close()

	for _, path := range []string{a2asrv.WellKnownAgentCardPath, legacyCardPath} {
		resp, body := httpDo(t, h.hc, "GET", h.srv.URL+path, "", nil)
		_, inner := httpDo(t, h.hc, "GET", srv.URL+path, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		// v0.3's own fields are there, and every field of the inner card is kept.
		var got, want map[string]any
		if json.Unmarshal(body, &got) != nil || json.Unmarshal(inner, &want) != nil {
			t.Fatalf("%s: card %s", path, body)
		}
		if got["url"] != h.srv.URL+jsonrpc03Path || got["protocolVersion"] != "0.3" || got["preferredTransport"] != "JSONRPC" {
			t.Fatalf("%s: card %s lacks v0.3's top-level fields", path, body)
		}
		caps := got["capabilities"].(map[string]any)
		exts := caps["extensions"].([]any)
		last := exts[len(exts)-1].(map[string]any)
		if last["uri"] != idempotency.ExtensionURI || last["required"] != false {
			t.Fatalf("%s: extensions %v", path, exts)
		}
		caps["extensions"] = exts[:len(exts)-1]
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: served card without the entry\n%v\ndiffers from the inner card\n%v", path, got, want)
		}

		// a2a-go v0.3.x's card type and a2av0's parser both see the extension.
		var legacy legacya2a.AgentCard
		if err := json.Unmarshal(body, &legacy); err != nil || legacy.URL != h.srv.URL+jsonrpc03Path ||
			!slices.ContainsFunc(legacy.Capabilities.Extensions, func(e legacya2a.AgentExtension) bool {
				return e.URI == idempotency.ExtensionURI && !e.Required
			}) {
			t.Fatalf("%s: v0.3 card %+v (%v) without the extension", path, legacy, err)
		}
		parsed, err := a2av0.NewAgentCardParser()(body)
		if err != nil || !slices.ContainsFunc(parsed.Capabilities.Extensions, func(e a2a.AgentExtension) bool {
			return e.URI == idempotency.ExtensionURI
		}) {
			t.Fatalf("%s: parsed card %+v (%v) without the extension", path, parsed, err)
		}
	}

	resolver := &agentcard.Resolver{Client: h.hc, CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(context.Background(), h.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithDefaultsDisabled(),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: h.hc}))
	if err != nil {
		t.Fatal(err)
	}
	msg := keyedMessage(t, idempotency.NewKey(), "echo through the card")
	var ids []a2a.TaskID
	for range 2 {
		res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, taskOf(res))
	}
	if ids[0] == "" || ids[0] != ids[1] || h.agent.runsOf(msg.ID) != 1 {
		t.Fatalf("tasks %v, agent ran %d times: want one task, one run", ids, h.agent.runsOf(msg.ID))
	}
	if e := h.lastEvent(); e.Version != "0.3" || e.Outcome != "replayed" {
		t.Fatalf("last event %+v, want a v0.3 replay", e)
	}
}
