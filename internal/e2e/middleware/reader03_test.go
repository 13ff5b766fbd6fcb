package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	legacya2a "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit"
)

// The middleware's reader tests compare its reading of tricky bodies in A2A v0.3
// with a2a-go's through two fixtures, which this test holds to a2a-go: how a2av0's
// JSON-RPC handler decodes each body, and what a2av0's handlers hand the agent for
// each. With -update, the wants are written anew from the bodies the fixtures hold.

const (
	readingsFixture = "../../../middleware/testdata/jsonrpc03-readings.json"
	runsFixture     = "../../../middleware/testdata/server03-runs.json"
)

// reading03 is one entry of the readings fixture.
type reading03 struct {
	Body    string          `json:"body"`
	Request json.RawMessage `json:"request"`
}

// run03 is one entry of the runs fixture.
type run03 struct {
	Path string          `json:"path"`
	Body string          `json:"body"`
	Ran  json.RawMessage `json:"ran"`
}

// readJSON decodes the file at path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// a2av0JSONRPCRead decodes body as a2av0's JSON-RPC handler (and a2a-go v0.3.x's)
// does, and returns the JSON of the v1.0 SendMessageRequest it hands the request
// handler, or null when it would answer an error without running anything.
func a2av0JSONRPCRead(body []byte) json.RawMessage {
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
		ID      any             `json:"id"`
	}
	null := json.RawMessage("null")
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		return null
	}
	switch req.ID.(type) {
	case nil, string, float64:
	default:
		return null
	}
	if req.JSONRPC != "2.0" || (req.Method != "message/send" && req.Method != "message/stream") {
		return null
	}
	var p legacya2a.MessageSendParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return null
	}
	v1, err := a2av0.ToV1SendMessageRequest(&p)
	if err != nil {
		return null
	}
	out, err := json.Marshal(v1)
	if err != nil {
		return null
	}
	return out
}

func TestReaderFixturesAreA2AGo(t *testing.T) {
	var readings []reading03
	readJSON(t, readingsFixture, &readings)
	for i := range readings {
		readings[i].Request = a2av0JSONRPCRead([]byte(readings[i].Body))
	}
	checkFixture(t, readingsFixture, readings)

	var runs []run03
	readJSON(t, runsFixture, &runs)
	// The agent records the message of its last run, and replies.
	var seen atomic.Pointer[a2a.Message]
	a := &testkit.Agent{Script: func(_ context.Context, ec *a2asrv.ExecutorContext, _ string, _ int64) (a2a.Event, error) {
		seen.Store(ec.Message)
		return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("ok")), nil
	}}
	rh := a2asrv.NewHandler(a, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	handlers := map[string]http.Handler{
		"/v03":             a2av0.NewJSONRPCHandler(rh),
		"/v1/message:send": a2av0.NewRESTHandler(rh),
	}
	for i, r := range runs {
		h, ok := handlers[r.Path]
		if !ok {
			t.Fatalf("%s: no v0.3 handler at %s", runsFixture, r.Path)
		}
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", r.Path, strings.NewReader(r.Body)))
		runs[i].Ran = json.RawMessage("null")
		if m := seen.Swap(nil); m != nil {
			runs[i].Ran, _ = json.Marshal(struct {
				ID       string         `json:"messageId"`
				Metadata map[string]any `json:"metadata,omitempty"`
			}{m.ID, m.Metadata})
		}
	}
	checkFixture(t, runsFixture, runs)
}
