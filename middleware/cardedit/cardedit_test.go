package cardedit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

const (
	testURI   = "https://example.com/ext/idem/v1"
	testEntry = `{"uri":"https://example.com/ext/idem/v1","description":"a <b> & c","required":false}`
)

// goView is what a Go client decodes of a card's extensions.
type goView struct {
	Capabilities struct {
		Extensions []any `json:"extensions"`
	} `json:"capabilities"`
}

// checkAdded fails unless out is card with testEntry added where a Go client reads
// it: its extensions are the card's and the entry, and, when card decodes as an
// a2a.AgentCard, everything else decodes as before.
func checkAdded(t *testing.T, card, out []byte) {
	t.Helper()
	var before, after goView
	var entry any
	json.Unmarshal([]byte(testEntry), &entry)
	if err := json.Unmarshal(card, &before); err != nil {
		t.Fatalf("card %s does not decode: %v", card, err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatalf("edited card %s does not decode: %v", out, err)
	}
	if want := append(before.Capabilities.Extensions, entry); !reflect.DeepEqual(after.Capabilities.Extensions, want) {
		t.Fatalf("edited card %s\nextensions %v\nwant %v", out, after.Capabilities.Extensions, want)
	}
	var orig, edited a2a.AgentCard
	if json.Unmarshal(card, &orig) != nil {
		return
	}
	if err := json.Unmarshal(out, &edited); err != nil {
		t.Fatalf("edited card %s is no longer an a2a.AgentCard: %v", out, err)
	}
	edited.Capabilities.Extensions = edited.Capabilities.Extensions[:len(edited.Capabilities.Extensions)-1]
	if len(orig.Capabilities.Extensions) == 0 {
		orig.Capabilities.Extensions = edited.Capabilities.Extensions
	}
	if !reflect.DeepEqual(orig, edited) {
		t.Fatalf("edited card %+v\nwant %+v", edited, orig)
	}
}

func TestAddExtension(t *testing.T) {
	for _, tc := range []struct {
		name, card, want string
	}{
		{"compact",
			`{"name":"A","capabilities":{"streaming":true,"extensions":[{"uri":"x"}]},"skills":[]}`,
			`{"name":"A","capabilities":{"streaming":true,"extensions":[{"uri":"x"},` + testEntry + `]},"skills":[]}`},
		{"pretty",
			"{\n  \"name\": \"A\",\n  \"capabilities\": {\n    \"extensions\": [\n      {\n        \"uri\": \"x\"\n      }\n    ]\n  }\n}",
			"{\n  \"name\": \"A\",\n  \"capabilities\": {\n    \"extensions\": [\n      {\n        \"uri\": \"x\"\n      },\n      {\n        \"uri\": \"https://example.com/ext/idem/v1\",\n        \"description\": \"a <b> & c\",\n        \"required\": false\n      }\n    ]\n  }\n}"},
		{"tabs and CRLF, no extensions",
			"{\r\n\t\"name\": \"A\",\r\n\t\"capabilities\": {\r\n\t\t\"streaming\": true\r\n\t}\r\n}",
			"{\r\n\t\"name\": \"A\",\r\n\t\"capabilities\": {\r\n\t\t\"streaming\": true,\r\n\t\t\"extensions\": [\r\n\t\t\t{\r\n\t\t\t\t\"uri\": \"https://example.com/ext/idem/v1\",\r\n\t\t\t\t\"description\": \"a <b> & c\",\r\n\t\t\t\t\"required\": false\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}"},
		{"pretty, empty extensions",
			"{\n  \"capabilities\": {\n    \"extensions\": []\n  }\n}",
			"{\n  \"capabilities\": {\n    \"extensions\": [\n      {\n        \"uri\": \"https://example.com/ext/idem/v1\",\n        \"description\": \"a <b> & c\",\n        \"required\": false\n      }\n    ]\n  }\n}"},
		{"pretty, no capabilities",
			"{\n  \"name\": \"A\",\n  \"x-custom\": {\"keep\": [1, 2]}\n}",
			"{\n  \"name\": \"A\",\n  \"x-custom\": {\"keep\": [1, 2]},\n  \"capabilities\": {\n    \"extensions\": [\n      {\n        \"uri\": \"https://example.com/ext/idem/v1\",\n        \"description\": \"a <b> & c\",\n        \"required\": false\n      }\n    ]\n  }\n}"},
		{"spaced one line (Python's default)",
			`{"name": "A", "capabilities": {}}`,
			`{"name": "A", "capabilities": {"extensions": [{"uri": "https://example.com/ext/idem/v1", "description": "a <b> & c", "required": false}]}}`},
		{"null capabilities", `{"capabilities":null,"name":"A"}`,
			`{"capabilities":{"extensions":[` + testEntry + `]},"name":"A"}`},
		{"null extensions", `{"capabilities":{"extensions":null}}`,
			`{"capabilities":{"extensions":[` + testEntry + `]}}`},
		{"empty card", `{}`, `{"capabilities":{"extensions":[` + testEntry + `]}}`},
		{"duplicate capabilities: the last is read",
			`{"capabilities":{"extensions":[{"uri":"a"}]},"capabilities":{"extensions":[{"uri":"b"}]}}`,
			`{"capabilities":{"extensions":[{"uri":"a"}]},"capabilities":{"extensions":[{"uri":"b"},` + testEntry + `]}}`},
		{"duplicate capabilities: extensions only in the first",
			`{"capabilities":{"extensions":[{"uri":"a"}]},"Capabilities":{"streaming":true}}`,
			`{"capabilities":{"extensions":[{"uri":"a"},` + testEntry + `]},"Capabilities":{"streaming":true}}`},
		{"duplicate capabilities: none has extensions",
			`{"capabilities":{"streaming":true},"CAPABILITIES":{"pushNotifications":true},"capabilities":null}`,
			`{"capabilities":{"streaming":true},"CAPABILITIES":{"pushNotifications":true,"extensions":[` + testEntry + `]},"capabilities":null}`},
		{"escaped and folded names",
			`{"capabilit\u0069es":{"extenſions":[{"uri":"a"}],"extensions_x":[]}}`,
			`{"capabilit\u0069es":{"extenſions":[{"uri":"a"},` + testEntry + `],"extensions_x":[]}}`},
		{"duplicate extensions: a later null empties them",
			`{"capabilities":{"extensions":[{"uri":"a"}],"extensions":null}}`,
			`{"capabilities":{"extensions":[{"uri":"a"}],"extensions":[` + testEntry + `]}}`},
		{"unknown members and strings with brackets",
			`{"x-a":{"capabilities":{"extensions":[]}},"capabilities":{"x-b":"]}\"{[","extensions":[{"uri":"a","params":{"k":[1,{"z":null}]}}]},"x-c":[{}]}`,
			`{"x-a":{"capabilities":{"extensions":[]}},"capabilities":{"x-b":"]}\"{[","extensions":[{"uri":"a","params":{"k":[1,{"z":null}]}},` + testEntry + `]},"x-c":[{}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, outcome := AddExtension([]byte(tc.card), testURI, []byte(testEntry))
			if outcome != Added || string(out) != tc.want {
				t.Fatalf("%v\n%s\nwant\n%s", outcome, out, tc.want)
			}
			checkAdded(t, []byte(tc.card), out)
		})
	}
}

// A pretty card from encoding/json, at any indentation, gets the entry as
// encoding/json would have written it.
func TestAddExtensionMatchesMarshalIndent(t *testing.T) {
	card := &a2a.AgentCard{Name: "A", Capabilities: a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{{URI: "x"}}}}
	entry := a2a.AgentExtension{URI: testURI, Description: "idempotent sends", Params: map[string]any{"k": []any{1}}}
	entryJSON, _ := json.Marshal(entry)
	withEntry := *card
	withEntry.Capabilities.Extensions = append(withEntry.Capabilities.Extensions, entry)
	for _, indent := range []string{" ", "  ", "    ", "\t"} {
		in, _ := json.MarshalIndent(card, "", indent)
		want, _ := json.MarshalIndent(withEntry, "", indent)
		out, outcome := AddExtension(in, testURI, entryJSON)
		if outcome != Added || !bytes.Equal(out, want) {
			t.Fatalf("indent %q: %v\n%s\nwant\n%s", indent, outcome, out, want)
		}
	}
}

func TestAddExtensionLeavesCardAlone(t *testing.T) {
	for _, tc := range []struct {
		name, card string
		want       Outcome
	}{
		{"listed", `{"capabilities":{"extensions":[{"uri":"` + testURI + `","required":true}]}}`, Listed},
		{"listed with a folded name", `{"capabilities":{"extensions":[{"URI":"` + testURI + `"}]}}`, Listed},
		{"signed", `{"capabilities":{},"signatures":[{"protected":"e30","signature":"c2ln"}]}`, Signed},
		{"signed, folded name", `{"Signatures":[{"protected":"e30","signature":"c2ln"}]}`, Signed},
		{"signed and listed", `{"capabilities":{"extensions":[{"uri":"` + testURI + `"}]},"signatures":[{}]}`, Listed},
		{"not JSON", `{"capabilities":`, Unreadable},
		{"not an object", `[{"capabilities":{}}]`, Unreadable},
		{"capabilities not an object", `{"capabilities":"all"}`, Unreadable},
		{"extensions not an array", `{"capabilities":{"extensions":{"uri":"a"}}}`, Unreadable},
		{"an extension not an object", `{"capabilities":{"extensions":["a"]}}`, Unreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, outcome := AddExtension([]byte(tc.card), testURI, []byte(testEntry))
			if outcome != tc.want || string(out) != tc.card {
				t.Fatalf("%v %s, want %v and the card unchanged", outcome, out, tc.want)
			}
		})
	}
	// An empty signatures array signs nothing.
	if _, outcome := AddExtension([]byte(`{"signatures":[]}`), testURI, []byte(testEntry)); outcome != Added {
		t.Fatalf("empty signatures: %v", outcome)
	}
}

func FuzzAddExtension(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"capabilities":{"extensions":[{"uri":"a"}]}}`, "{\n  \"capabilities\": {\n    \"extensions\": []\n  }\n}",
		`{"capabilities":null,"Capabilities":{"x":1},"capabilities":{"extensions":null}}`,
		`{"capabilities":{"extensions":[{"uri":"a"}]},"capabilities":{"streaming":true}}`,
		`{"a":[{"b":"}"}],"capabilities":{},"signatures":[]}`, `{ "capabilities" : { "extensions" : [ ] } }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, card []byte) {
		out, outcome := AddExtension(card, testURI, []byte(testEntry))
		if outcome != Added {
			if !bytes.Equal(out, card) {
				t.Fatalf("%v changed the card", outcome)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("edited card %q is not JSON", out)
		}
		var v goView
		if json.Unmarshal(card, &v) != nil {
			return // a Go client cannot read the card at all
		}
		checkAdded(t, card, out)
	})
}

func TestRewriteInterfaceURLs(t *testing.T) {
	const public = "https://agents.example.com/a2a?x=1&y=2"
	for _, tc := range []struct {
		name, card string
	}{
		{"v1.0", `{"name":"A","supportedInterfaces":[{"url":"http://10.0.0.5:8080/rpc","protocolBinding":"JSONRPC"},{"protocolBinding":"HTTP+JSON","url":"http://10.0.0.5:8080/rest"}],"provider":{"url":"https://example.com"}}`},
		{"v0.3", "{\n  \"url\": \"http://10.0.0.5:8080/rpc\",\n  \"preferredTransport\": \"JSONRPC\",\n  \"additionalInterfaces\": [\n    {\"transport\": \"GRPC\", \"url\": \"10.0.0.5:9090\"}\n  ],\n  \"documentationUrl\": \"https://example.com/docs\"\n}"},
		{"a2av0's card joining both", `{"supportedInterfaces":[{"url":"http://in/rpc"}],"url":"http://in/rpc","additionalInterfaces":[{"url":"http://in/rpc"}]}`},
		{"duplicates and folded names", `{"URL":"http://in/a","url":"http://in/b","supportedInterfaces":[{"url":"http://in/c","Url":"http://in/d"}],"SupportedInterfaces":[{"url":"http://in/e"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			out, ok := RewriteInterfaceURLs([]byte(tc.card), func(u string) string {
				seen = append(seen, u)
				return public
			})
			if !ok {
				t.Fatal("not rewritten")
			}
			// Every interface URL the card had, and nothing else, now reads public.
			back := string(out)
			for _, u := range seen {
				back = strings.Replace(back, `"`+public+`"`, `"`+u+`"`, 1)
			}
			if back != tc.card || strings.Contains(string(out), "://in/") || strings.Contains(string(out), "10.0.0.5") {
				t.Fatalf("rewritten %s\nwith the old URLs back %s\nwant %s", out, back, tc.card)
			}
		})
	}
	if out, ok := RewriteInterfaceURLs([]byte(`["url"]`), func(string) string { return "x" }); ok || out != nil {
		t.Fatalf("an array: %s %v", out, ok)
	}
	same := `{"url":"http:\/\/in\/a"}`
	if out, _ := RewriteInterfaceURLs([]byte(same), func(u string) string { return u }); string(out) != same {
		t.Fatalf("an unchanged URL lost its bytes: %s", out)
	}
}
