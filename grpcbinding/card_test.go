package grpcbinding

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// The extended card (GetExtendedAgentCard) lists the extension exactly as the public
// card does, on every binding, when the index can honour keys; and not when it cannot.
func TestExtendedCardListsExtension(t *testing.T) {
	card := func() *a2a.AgentCard {
		return &a2a.AgentCard{Name: "extended", Description: "the authenticated card", Version: "1.0",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface("http://127.0.0.1/jsonrpc", a2a.TransportProtocolJSONRPC),
				a2a.NewAgentInterface("http://localhost/rest", a2a.TransportProtocolHTTPJSON)},
			Capabilities: a2a.AgentCapabilities{Streaming: true, ExtendedAgentCard: true,
				Extensions: []a2a.AgentExtension{{URI: "https://example.com/other", Description: "another"}}},
			DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills: []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}}}
	}
	for _, honours := range []bool{true, false} {
		s := startServer(t, serverConfig{keyed: true, noIndex: !honours, card: card()})
		public := publicEntry(t, s.httpURL)
		if honours != (public != nil) {
			t.Fatalf("honours %v: the public card's entry %v", honours, public)
		}
		for _, p := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC} {
			got, err := s.client(t, p).GetExtendedAgentCard(context.Background(), &a2a.GetExtendedAgentCardRequest{})
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var entries []a2a.AgentExtension
			for _, e := range got.Capabilities.Extensions {
				if e.URI == idempotency.ExtensionURI {
					entries = append(entries, e)
				}
			}
			switch {
			case !honours && len(entries) != 0:
				t.Fatalf("%s: an index that cannot honour keys, and the extended card lists the extension: %v", p, entries)
			case honours && (len(entries) != 1 || entries[0].Description != public.Description || entries[0].Required != public.Required ||
				entries[0].Description != middleware.ExtensionDescription):
				t.Fatalf("%s: extended card's entries %+v, want one as the public card's %+v", p, entries, public)
			case len(got.Capabilities.Extensions) != len(entries)+1 || got.Name != "extended":
				t.Fatalf("%s: the rest of the card changed: %+v", p, got)
			}
		}
	}
}

// publicEntry returns the extension's entry on the public card served at base, or nil.
func publicEntry(t *testing.T, base string) *a2a.AgentExtension {
	t.Helper()
	resp, err := http.Get(base + a2asrv.WellKnownAgentCardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		t.Fatalf("public card %s: %v", body, err)
	}
	for _, e := range card.Capabilities.Extensions {
		if e.URI == idempotency.ExtensionURI {
			return &e
		}
	}
	return nil
}
