package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// The card a2a-go v0.3.x's own handlers write reaches a v0.3 client with the
// extension in capabilities.extensions, and its bytes are the handler's but for the
// entry, at both well-known paths.
func TestAgentCardFromV03Handlers(t *testing.T) {
	card := &a2a.AgentCard{
		Name: "Legacy", Description: "a2a-go v0.3", Version: "1", ProtocolVersion: "0.3.0",
		URL: "http://127.0.0.1/jsonrpc", PreferredTransport: a2a.TransportProtocolJSONRPC,
		AdditionalInterfaces: []a2a.AgentInterface{{Transport: a2a.TransportProtocolHTTPJSON, URL: "http://127.0.0.1/rest"}},
		DefaultInputModes:    []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Capabilities: a2a.AgentCapabilities{Streaming: true, Extensions: []a2a.AgentExtension{{URI: "https://example.com/ext/geo/v1"}}},
		Skills:       []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "echoes", Tags: []string{"echo"}}},
	}
	bare := *card
	bare.Capabilities = a2a.AgentCapabilities{}
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
		card *a2a.AgentCard
	}{
		{"static", a2asrv.NewStaticAgentCardHandler(card), card},
		{"dynamic", a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
			return &bare, nil
		})), &bare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle(a2asrv.WellKnownAgentCardPath, tc.h)
			mux.Handle("/.well-known/agent.json", tc.h)
			inner := httptest.NewServer(mux)
			defer inner.Close()
			srv := httptest.NewServer(mw(mux))
			defer srv.Close()
			for _, path := range []string{a2asrv.WellKnownAgentCardPath, "/.well-known/agent.json"} {
				want, served := get(t, inner.URL+path), get(t, srv.URL+path)
				var got a2a.AgentCard
				if err := json.Unmarshal([]byte(served), &got); err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(got.Capabilities.Extensions, func(e a2a.AgentExtension) bool {
					return e.URI == idempotency.ExtensionURI && !e.Required && e.Description != ""
				})
				if i != len(got.Capabilities.Extensions)-1 {
					t.Fatalf("%s: v0.3 card %+v without the extension last", path, got.Capabilities)
				}
				// The entry as the middleware writes it: its members in its order.
				ext := got.Capabilities.Extensions[i]
				entry := `{"uri":` + mustJSON(ext.URI) + `,"description":` + mustJSON(ext.Description) + `,"required":false}`
				without := strings.Replace(served, ","+entry, "", 1)
				without = strings.Replace(without, `"extensions":[`+entry+`]`, "", 1)
				without = strings.Replace(without, "{,", "{", 1)
				if without != want {
					t.Fatalf("%s: served card without the entry\n%s\ndiffers from the handler's\n%s", path, without, want)
				}
				if got.Capabilities.Extensions = got.Capabilities.Extensions[:i]; len(got.Capabilities.Extensions) == 0 {
					got.Capabilities.Extensions = nil
				}
				if !reflect.DeepEqual(&got, tc.card) {
					t.Fatalf("%s: served card %+v\nwant %+v", path, got, tc.card)
				}
			}
			resolved, err := agentcard.NewResolver(http.DefaultClient).Resolve(context.Background(), srv.URL)
			if err != nil || !slices.ContainsFunc(resolved.Capabilities.Extensions, func(e a2a.AgentExtension) bool {
				return e.URI == idempotency.ExtensionURI
			}) {
				t.Fatalf("v0.3 resolver: %+v (%v) without the extension", resolved, err)
			}
		})
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
