package servercheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/servercheck"
)

// listingStore is a task store that lists every task to any caller, so that the
// checker can ask whether a refused send created one.
func listingStore() taskstore.Store {
	return taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: func(context.Context) (string, error) { return "anyone", nil }})
}

// refuseAfterRunning is a server's flaw: it refuses a malformed key with the right
// error, in the binding's shape, but only after the send ran.
func refuseAfterRunning(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		var call struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(body, &call)
		params := body
		if call.Method != "" {
			params = call.Params
		}
		var send struct {
			Message struct {
				Metadata map[string]any `json:"metadata"`
			} `json:"message"`
		}
		json.Unmarshal(params, &send)
		_, _, keyErr := idempotency.KeyOf(send.Message.Metadata)
		if keyErr == nil {
			next.ServeHTTP(w, r)
			return
		}
		streaming := call.Method == "SendStreamingMessage" || strings.HasSuffix(r.URL.Path, ":stream")
		if !streaming {
			next.ServeHTTP(httptest.NewRecorder(), r) // the flaw: it ran
		}
		w.Header().Set("A2A-Extensions", idempotency.ExtensionURI)
		if call.Method != "" {
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": call.ID, "error": map[string]any{"code": -32602, "message": keyErr.Error()}})
			if streaming {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write([]byte("data: " + string(msg) + "\n\n"))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT", "message": keyErr.Error()}})
	})
}

// Where the server lists tasks, malformed-keys asks it whether the refused sends
// created any: the kit's created none; a server that ran them before refusing fails.
func TestRefusedSendsCreateNothing(t *testing.T) {
	kit := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), TaskStore: listingStore()})
	rep := check(t, kit.URL, servercheck.Options{Only: []string{"malformed-keys"}})
	for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
		if r, _ := rep.Result("malformed-keys", iface); r.Status != servercheck.Pass || !strings.Contains(r.Detail, "no task in their context") {
			t.Errorf("the kit, malformed-keys on %s: %s (%s), want pass, no task listed", iface, r.Status, r.Detail)
		}
	}

	flawed := testkit.NewServer(t, testkit.Config{TaskStore: listingStore(), Wrap: refuseAfterRunning,
		Extensions: []a2a.AgentExtension{{URI: idempotency.ExtensionURI}}})
	rep = check(t, flawed.URL, servercheck.Options{Only: []string{"malformed-keys"}})
	for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
		if r, _ := rep.Result("malformed-keys", iface); r.Status != servercheck.Fail || !strings.Contains(r.Detail, "created 5 tasks") {
			t.Errorf("a server that runs before refusing, malformed-keys on %s: %s (%s), want fail: created 5 tasks", iface, r.Status, r.Detail)
		}
	}
}

// strictVersion refuses, as a v1.0 server that reads a request without A2A-Version
// as v0.3 would, every A2A request that does not carry A2A-Version: 1.0 (the card
// excepted).
func strictVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/agent-card.json" && r.Header.Get("A2A-Version") != "1.0" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"A2A-Version 0.3 is not served here"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Every request the checker makes to a v1.0 interface names the version: against a
// server that insists, the task lists of malformed-keys are read on both bindings.
func TestV1RequestsCarryTheVersion(t *testing.T) {
	kit := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), TaskStore: listingStore(), Wrap: strictVersion})
	rep := check(t, kit.URL, servercheck.Options{})
	for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
		if r, _ := rep.Result("malformed-keys", iface); r.Status != servercheck.Pass || !strings.Contains(r.Detail, "no task in their context") {
			t.Errorf("malformed-keys on %s: %s (%s), want pass, no task listed", iface, r.Status, r.Detail)
		}
	}
	if !rep.OK() {
		t.Errorf("verdict %s, want pass", rep.Verdict)
	}
}
