package middleware_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// A JSON-RPC handler on a catch-all mount, as a2a-go's CLI and TCK servers have it,
// runs a JSON-RPC call sent to any path, one that looks like HTTP+JSON's included.
// The same keyed bytes sent to /jsonrpc and to /x/message:send run the agent once
// (issue 14, item 4).
func TestCatchAllJSONRPCDeduplicated(t *testing.T) {
	ag := mwtest.NewAgent()
	rh := a2asrv.NewHandler(ag, a2asrv.WithLogger(mwtest.DiscardLogger()))
	mux := http.NewServeMux()
	mux.Handle("/", a2asrv.NewJSONRPCHandler(rh))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(rh)))
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Logger: mwtest.DiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(mux))
	t.Cleanup(srv.Close)

	msg := mwtest.KeyedMessage(t, idempotency.NewKey(), "echo once")
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendMessage",
		"params": a2a.SendMessageRequest{Message: msg}})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, path := range []string{"/jsonrpc", "/x/message:send", "/x/message:stream"} {
		resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var answer struct {
			Result struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil || answer.Result.Task.ID == "" {
			t.Fatalf("%s answered %d %s, want a JSON-RPC result with the task", path, resp.StatusCode, raw)
		}
		tasks = append(tasks, answer.Result.Task.ID)
	}
	if n := ag.RunsOf(msg.ID); n != 1 {
		t.Errorf("the agent ran %d times for one keyed send, want 1", n)
	}
	if tasks[0] != tasks[1] || tasks[0] != tasks[2] {
		t.Errorf("the answers name tasks %v, want one task", tasks)
	}
}
