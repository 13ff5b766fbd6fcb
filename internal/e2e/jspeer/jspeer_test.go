package jspeer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/e2e/jspeer"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/servercheck"
)

// The checker passes the sidecar in front of the official JS SDK's server, on
// every interface its card lists (A2A v1.0 and v0.3, JSON-RPC and HTTP+JSON), and
// the JS agent ran once for every keyed message the checker sent (counted on the
// JS side); bare, the JS server is reported "not advertised".
func TestCheckerPassesJSBehindSidecar(t *testing.T) {
	jspeer.Require(t)
	const delay = 300 * time.Millisecond
	js := jspeer.Start(t, jspeer.Options{Delay: delay})
	ctx := context.Background()

	bare, err := servercheck.Run(ctx, js.URL, servercheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if bare.Advertised || bare.Verdict != "not advertised" || bare.OK() {
		t.Fatalf("the bare JS server: verdict %q, advertised %v; want \"not advertised\"\n%s", bare.Verdict, bare.Advertised, bare)
	}
	if bare.Requests != 1 {
		t.Errorf("the bare JS server took %d requests, want 1 (the card)", bare.Requests)
	}
	if js.Runs(t).Total != 0 {
		t.Fatalf("checking the bare server ran the agent: %+v", js.Runs(t))
	}

	proxy := testkit.StartSidecar(t, js.URL)
	rep, err := servercheck.Run(ctx, proxy, servercheck.Options{AgentDelay: delay})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests in %d ms", rep.Requests, rep.Duration)
	if !rep.OK() {
		t.Errorf("the sidecar in front of the JS server: verdict %q\n%s", rep.Verdict, rep)
	}
	// Every interface the JS card lists was checked, all four.
	want := []string{"JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3", "HTTP+JSON 0.3"}
	if len(rep.Interfaces) != len(want) {
		t.Fatalf("the card lists %v, want %v", rep.Interfaces, want)
	}
	for i, w := range want {
		iface := rep.Interfaces[i].String()
		if !strings.HasPrefix(iface, w+" "+proxy) {
			t.Errorf("interface %d is %s, want %s at the sidecar", i+1, iface, w)
		}
		for _, id := range []string{"replay", "lost-answer", "concurrent", "stream-retry", "retry-during-run", "key-reuse", "malformed-keys"} {
			if r, ok := rep.Result(id, iface); !ok || r.Status != servercheck.Pass {
				t.Errorf("%s on %s: %+v, want pass", id, iface, r)
			}
		}
	}
	// A retry through each other interface (v1.0 HTTP+JSON, v0.3 JSON-RPC, v0.3
	// HTTP+JSON at /a2a/rest/v1/message:send, which is no tenant "v1") gets the task
	// the first attempt through v1.0 JSON-RPC made.
	cross := 0
	for _, r := range rep.Results {
		if r.ID == "cross-interface" {
			cross++
			if r.Status != servercheck.Pass {
				t.Errorf("cross-interface %s: %s: %s", r.Interface, r.Status, r.Detail)
			}
		}
	}
	if cross != len(want)-1 {
		t.Errorf("%d cross-interface results, want one for each interface after the first", cross)
	}

	// Counted on the JS side: each keyed message ran at most once; the sends that
	// must run once ran once; the refused ones never ran.
	headerClaimed := true
	for _, r := range rep.Results {
		if r.ID == "header-carrier" && r.Status != servercheck.Pass {
			headerClaimed = false
		}
	}
	runs := js.Runs(t)
	seen := map[string]int{}
	for text, n := range runs.ByText {
		check := checkOf(text)
		seen[check] += n
		switch {
		case check == "unkeyed" || strings.HasPrefix(check, "header-carrier") && !headerClaimed:
		case check == "malformed" || check == "malformed-stream" || check == "key-reuse other" || check == "header-carrier mismatch" || check == "header-carrier malformed":
			t.Errorf("the refused message %q ran %d times", text, n)
		case n > 1:
			t.Errorf("the JS agent ran %d times for the keyed message %q", n, text)
		}
	}
	for _, check := range []string{"replay", "lost-answer", "concurrent", "stream-retry", "retry-during-run", "context-id", "cut-request"} {
		if seen[check] != len(want) {
			t.Errorf("the %s messages ran %d times in all, want %d (once on each interface)", check, seen[check], len(want))
		}
	}
}

// The JS agent answers a text naming "reply with a message" with a Message: behind
// the sidecar, its retries get the same Message on every interface.
func TestCheckerJSMessageReplies(t *testing.T) {
	jspeer.Require(t)
	js := jspeer.Start(t, jspeer.Options{})
	proxy := testkit.StartSidecar(t, js.URL)
	rep, err := servercheck.Run(context.Background(), proxy, servercheck.Options{Text: "reply with a message",
		Only: []string{"message-replay", "lost-answer", "concurrent", "stream-retry"}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("verdict %q\n%s", rep.Verdict, rep)
	}
	for _, iface := range rep.Interfaces {
		if r, ok := rep.Result("message-replay", iface.String()); !ok || r.Status != servercheck.Pass {
			t.Errorf("message-replay on %s: %+v, want pass", iface, r)
		}
	}
	for text, n := range js.Runs(t).ByText {
		if n > 1 {
			t.Errorf("the JS agent ran %d times for the keyed message %q", n, text)
		}
	}
}

// checkOf returns the check a message text names: "idempotency check (replay
// 1a2b3c4d)" is "replay".
func checkOf(text string) string {
	_, rest, _ := strings.Cut(text, "(")
	rest = strings.TrimSuffix(rest, ")")
	if i := strings.LastIndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// A keyed send by the JS SDK's client (key in the message's metadata) and the same
// send keyed by the Idempotency-Key header alone (as curl would send it) reach one
// claim through the sidecar: both name one task, and the agent ran once. Both
// orders.
func TestJSClientAndHeaderCurlReachOneClaim(t *testing.T) {
	jspeer.Require(t)
	js := jspeer.Start(t, jspeer.Options{})
	proxy := testkit.StartSidecar(t, js.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for _, jsFirst := range []bool{true, false} {
		key, messageID := idempotency.NewKey(), testkit.RandomName("js-msg-")
		text := "one claim " + messageID
		var tasks []string
		sendJS := func() {
			r, err := jspeer.SendKeyed(ctx, t, proxy, key, messageID, text, "JSONRPC")
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, r.Task)
		}
		sendCurl := func() { tasks = append(tasks, headerOnlySend(t, ctx, proxy, key, messageID, text)) }
		if jsFirst {
			sendJS()
			sendCurl()
		} else {
			sendCurl()
			sendJS()
		}
		if tasks[0] == "" || tasks[0] != tasks[1] {
			t.Errorf("JS client first %v: the two sends named tasks %q and %q, want one task", jsFirst, tasks[0], tasks[1])
		}
		if n := js.Runs(t).ByText[text]; n != 1 {
			t.Errorf("JS client first %v: the agent ran %d times, want once (the header-only send did not reach the JS client's claim)", jsFirst, n)
		}
	}
}

// headerOnlySend sends, as curl would, one JSON-RPC SendMessage keyed by the
// Idempotency-Key header alone, and returns the task id it was answered with.
func headerOnlySend(t *testing.T, ctx context.Context, base, key, messageID, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"message": map[string]any{"messageId": messageID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}},
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/a2a/jsonrpc", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Result.Task.ID == "" {
		t.Fatalf("the header-only send got HTTP %d %s, want a task", resp.StatusCode, raw)
	}
	return out.Result.Task.ID
}
