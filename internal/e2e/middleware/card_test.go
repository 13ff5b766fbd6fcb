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
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
)

// The card of a server that also speaks A2A v0.3, as a2av0's compatibility producer
// serves it (v1.0's card joined with v0.3's top-level url, protocolVersion and
// preferredTransport), gets the extension at the same place, at v0.3's well-known
// path and at the older agent.json; a v0.3 client that resolves the card sees the
// extension, and its keyed sends through the card's interface are deduplicated.
func TestAgentCardV03(t *testing.T) {
	var base atomic.Pointer[string]
	producer := a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		card := mwtest.Card()
		card.SupportedInterfaces = []*a2a.AgentInterface{
			{URL: *base.Load() + mwtest.JSONRPC03Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
		}
		return card, nil
	})
	h := newHarness(t, mwtest.Config{Card: a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(producer))})
	base.Store(&h.Server.URL)
	srv := httptest.NewServer(h.Inner)
	defer srv.Close()

	for _, path := range []string{a2asrv.WellKnownAgentCardPath, mwtest.LegacyCardPath} {
		resp, body := get(t, h.HTTP, h.Server.URL+path)
		_, inner := get(t, h.HTTP, srv.URL+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		// v0.3's own fields are there, and every field of the inner card is kept.
		var got, want map[string]any
		if json.Unmarshal(body, &got) != nil || json.Unmarshal(inner, &want) != nil {
			t.Fatalf("%s: card %s", path, body)
		}
		if got["url"] != h.Server.URL+mwtest.JSONRPC03Path || got["protocolVersion"] != "0.3" || got["preferredTransport"] != "JSONRPC" {
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

		// a2av0's parser sees the extension (a2a-go v0.3.x's own card type reads it in
		// internal/e2e).
		parsed, err := a2av0.NewAgentCardParser()(body)
		if err != nil || !slices.ContainsFunc(parsed.Capabilities.Extensions, func(e a2a.AgentExtension) bool {
			return e.URI == idempotency.ExtensionURI
		}) {
			t.Fatalf("%s: parsed card %+v (%v) without the extension", path, parsed, err)
		}
	}

	resolver := &agentcard.Resolver{Client: h.HTTP, CardParser: a2av0.NewAgentCardParser()}
	card, err := resolver.Resolve(context.Background(), h.Server.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithDefaultsDisabled(),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: h.HTTP}))
	if err != nil {
		t.Fatal(err)
	}
	msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo through the card")
	var ids []a2a.TaskID
	for range 2 {
		res, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, mwtest.TaskOf(res))
	}
	if ids[0] == "" || ids[0] != ids[1] || h.Agent.RunsOf(msg.ID) != 1 {
		t.Fatalf("tasks %v, agent ran %d times: want one task, one run", ids, h.Agent.RunsOf(msg.ID))
	}
	if e := h.LastEvent(); e.Version != "0.3" || e.Outcome != "replayed" {
		t.Fatalf("last event %+v, want a v0.3 replay", e)
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

// The card a2av0's producer writes, joining v0.3's top-level fields to v1.0's card,
// is served byte for byte but for the extension's entry, as every other shape of
// card is (middleware/card_test.go): delete the entry and the rest is the inner card.
func TestAgentCardOfA2AV0OnlyInsertsTheEntry(t *testing.T) {
	var entry bytes.Buffer
	json.Compact(&entry, []byte(`{"uri":"`+idempotency.ExtensionURI+`","description":"`+
		`Idempotent sends: a message whose metadata carries `+idempotency.MetadataKey+` runs the agent once per key; `+
		`a retry with the same key and message gets the first attempt's task or reply.","required":false}`))
	e := entry.String()
	for _, tc := range []struct {
		name    string
		card    http.Handler
		path    string
		removed string
		added   string
	}{
		{"a2av0's card joining v0.3 and v1.0", a2asrv.NewAgentCardHandler(a2av0.NewAgentCardProducer(
			a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
				card := mwtest.Card()
				card.SupportedInterfaces = []*a2a.AgentInterface{{URL: "http://127.0.0.1" + mwtest.JSONRPC03Path,
					ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}}
				return card, nil
			}))), "", "", "[" + e + "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := cmp.Or(tc.path, a2asrv.WellKnownAgentCardPath)
			h := newHarness(t, mwtest.Config{Card: tc.card})
			resp, served := get(t, h.HTTP, h.Server.URL+path)
			inner := httptest.NewServer(h.Inner)
			defer inner.Close()
			_, want := get(t, h.HTTP, inner.URL+path)
			if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(served)) {
				t.Fatalf("%d, Content-Length %d for %d bytes", resp.StatusCode, resp.ContentLength, len(served))
			}
			if removed, added := inserted(t, want, served); removed != tc.removed || added != tc.added {
				t.Fatalf("served card %s\nreplaced %q of the inner card %s\nwith %s\nwant %q replaced with %s", served, removed, want, added, tc.removed, tc.added)
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
		})
	}
}

// get fetches url with hc and returns the response with its body.
func get(t *testing.T, hc *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}
