package middleware_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
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
		resp, body := mwtest.Get(t, h.HTTP, h.Server.URL+path)
		_, inner := mwtest.Get(t, h.HTTP, srv.URL+path)
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

// The card a2av0's producer writes, joining v0.3's top-level fields to v1.0's card,
// is served byte for byte but for the extension's entry, as every other shape of
// card is (middleware/card_test.go): delete the entry and the rest is the inner card.
func TestAgentCardOfA2AV0OnlyInsertsTheEntry(t *testing.T) {
	e := mwtest.CardEntry()
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
			h := newHarness(t, mwtest.Config{Card: tc.card})
			mwtest.CheckCardInsert(t, h, cmp.Or(tc.path, a2asrv.WellKnownAgentCardPath), tc.removed, tc.added)
		})
	}
}
