package servercheck_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/servercheck"
)

// check runs the checker against url and logs the report.
func check(t *testing.T, url string, opts servercheck.Options) *servercheck.Report {
	t.Helper()
	rep, err := servercheck.Run(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", rep)
	return rep
}

// checkRuns fails t unless every keyed message the checker sent ran at most once,
// and the first attempt whose answer the checker lost ran exactly once on each of
// the interfaces (its retries were answered from it, not run anew).
func checkRuns(t *testing.T, runs *testkit.CheckerRuns, interfaces int) {
	t.Helper()
	if lost := runs.KeyedOnce(t); lost != interfaces {
		t.Errorf("the agent ran %d times for the messages whose first answer was lost, want once on each of %d interfaces", lost, interfaces)
	}
}

// results returns the statuses of rep by check ID (the worst over interfaces).
func statuses(rep *servercheck.Report) map[string]servercheck.Status {
	out := map[string]servercheck.Status{}
	for _, r := range rep.Results {
		if out[r.ID] != servercheck.Fail {
			out[r.ID] = r.Status
		}
	}
	return out
}

// TestKitPasses: the kit (the middleware over memstore, the a2a-go adapter) in front
// of a real a2a-go server passes every check it claims, on JSON-RPC and HTTP+JSON,
// and the agent's own run counts agree with what the checker inferred.
func TestKitPasses(t *testing.T) {
	var runs testkit.CheckerRuns
	srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}),
		Agent: &testkit.Agent{Delay: 300 * time.Millisecond, OnRun: runs.OnRun}})
	rep := check(t, srv.URL, servercheck.Options{AgentDelay: 300 * time.Millisecond})
	if !rep.OK() {
		t.Fatalf("verdict %s, want pass; failed: %+v", rep.Verdict, rep.Failed())
	}
	st := statuses(rep)
	for _, id := range []string{"card", "malformed-keys", "cut-request", "replay", "key-reuse", "lost-answer",
		"concurrent", "stream-retry", "retry-during-run", "unkeyed", "extensions-header", "jsonrpc-id", "cross-interface", "context-id"} {
		if st[id] != servercheck.Pass {
			t.Errorf("check %s: %s, want pass", id, st[id])
		}
	}
	if st["message-replay"] != servercheck.NotApplicable {
		t.Errorf("message-replay against an agent that answers with tasks: %s, want n/a", st["message-replay"])
	}
	if r, _ := rep.Result("stream-retry", "JSONRPC"); !strings.Contains(r.Detail, "followed the live task") {
		t.Errorf("stream-retry against an agent working 300ms did not see the live task: %s", r.Detail)
	}
	if rep.Requests > 150 {
		t.Errorf("the run sent %d requests for two interfaces, want at most 150", rep.Requests)
	}
	srv.Close() // the agent's runs are all counted
	checkRuns(t, &runs, 2)
}

// TestKitMessageReplies: against an agent that answers with Messages, the retries
// get the same Message.
func TestKitMessageReplies(t *testing.T) {
	var runs testkit.CheckerRuns
	srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}),
		Agent: &testkit.Agent{ReplyPrefix: "reply", OnRun: runs.OnRun}})
	rep := check(t, srv.URL, servercheck.Options{Text: "reply please"})
	if !rep.OK() {
		t.Fatalf("verdict %s, want pass; failed: %+v", rep.Verdict, rep.Failed())
	}
	st := statuses(rep)
	for _, id := range []string{"message-replay", "lost-answer", "concurrent", "stream-retry", "retry-during-run"} {
		if st[id] != servercheck.Pass {
			t.Errorf("check %s: %s, want pass", id, st[id])
		}
	}
	checkRuns(t, &runs, 2)
}

// TestBareA2AGoNotAdvertised: a2a-go alone does not list the extension; the checker
// says so, checks nothing and sends nothing but the card request.
func TestBareA2AGoNotAdvertised(t *testing.T) {
	srv := testkit.NewServer(t, testkit.Config{})
	rep := check(t, srv.URL, servercheck.Options{})
	if rep.Verdict != "not advertised" || rep.Advertised || rep.OK() {
		t.Errorf("verdict %q advertised %v, want not advertised", rep.Verdict, rep.Advertised)
	}
	if len(rep.Results) != 1 || rep.Requests != 1 {
		t.Errorf("%d results, %d requests; want the card's alone", len(rep.Results), rep.Requests)
	}
	if srv.Runs() != 0 {
		t.Errorf("the agent ran %d times", srv.Runs())
	}
}

// TestAdvertisedWithoutDeduplicationFails: a server whose card lists the extension,
// with nothing in front of it, fails every check of a key's behaviour, each with the
// exchange that showed it.
func TestAdvertisedWithoutDeduplicationFails(t *testing.T) {
	srv := testkit.NewServer(t, testkit.Config{Agent: &testkit.Agent{Delay: 200 * time.Millisecond},
		Extensions: []a2a.AgentExtension{{URI: idempotency.ExtensionURI}}})
	rep := check(t, srv.URL, servercheck.Options{AgentDelay: 200 * time.Millisecond})
	if rep.OK() || rep.Verdict != "fail" {
		t.Fatalf("verdict %s, want fail", rep.Verdict)
	}
	for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
		for _, id := range []string{"malformed-keys", "replay", "key-reuse", "lost-answer", "concurrent",
			"stream-retry", "retry-during-run", "context-id", "extensions-header"} {
			r, ok := rep.Result(id, iface)
			if !ok || r.Status != servercheck.Fail {
				t.Errorf("%s on %s: %s (%s), want fail", id, iface, r.Status, r.Detail)
				continue
			}
			if len(r.Exchanges) == 0 || r.Exchanges[0].Request == "" || r.Exchanges[0].Response == "" {
				t.Errorf("%s on %s failed without the exchange that showed it", id, iface)
			}
		}
		if r, _ := rep.Result("unkeyed", iface); r.Status != servercheck.Pass {
			t.Errorf("unkeyed on %s: %s, want pass", iface, r.Status)
		}
	}
	if r, _ := rep.Result("cross-interface", ""); r.Status != servercheck.Fail {
		t.Errorf("cross-interface: %s (%s), want fail", r.Status, r.Detail)
	}
	if text := rep.String(); !strings.Contains(text, "VERDICT: FAIL") || !strings.Contains(text, "First failure: malformed-keys") {
		t.Errorf("the text report lacks the verdict or the first failure:\n%s", text)
	}
}

// keyPattern finds the key in a send's body (the checker's bodies are compact JSON).
var keyPattern = regexp.MustCompile(`"` + regexp.QuoteMeta(idempotency.MetadataKey) + `":"([^"]+)"`)

// freshKeyOnStreamingRetry is a server's flaw: it gives a streaming send whose key
// it has seen on a streaming send before a fresh key, so the kit behind it answers
// the streaming retry with a new task.
func freshKeyOnStreamingRetry(next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			streaming := bytes.Contains(body, []byte(`"SendStreamingMessage"`)) || strings.HasSuffix(r.URL.Path, "message:stream")
			if m := keyPattern.FindSubmatch(body); streaming && m != nil && idempotency.ValidateKey(string(m[1])) == nil {
				mu.Lock()
				again := seen[string(m[1])]
				seen[string(m[1])] = true
				mu.Unlock()
				if again {
					body = bytes.ReplaceAll(body, m[1], []byte(idempotency.NewKey()))
				}
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		}
		next.ServeHTTP(w, r)
	})
}

// TestStreamingRetryOfAnotherTaskFails: a server that deduplicates unary sends but
// answers a streaming retry with another task fails stream-retry, and only that.
func TestStreamingRetryOfAnotherTaskFails(t *testing.T) {
	srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}),
		Agent: &testkit.Agent{Delay: 200 * time.Millisecond}, Wrap: freshKeyOnStreamingRetry})
	rep := check(t, srv.URL, servercheck.Options{AgentDelay: 200 * time.Millisecond})
	for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
		r, _ := rep.Result("stream-retry", iface)
		if r.Status != servercheck.Fail || !strings.Contains(r.Detail, "did not attach") {
			t.Errorf("stream-retry on %s: %s (%s), want fail: the retry did not attach", iface, r.Status, r.Detail)
		}
		if len(r.Exchanges) != 2 {
			t.Errorf("stream-retry on %s failed with %d exchanges, want the first attempt's and the retry's", iface, len(r.Exchanges))
		}
	}
	if failed := rep.Failed(); len(failed) != 2 {
		t.Errorf("%d checks failed, want stream-retry on each interface alone: %+v", len(failed), failed)
	}
}

// The run stays within its request budget and its time: a run cut short by either
// is incomplete, never a pass.
func TestBounded(t *testing.T) {
	srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{})})
	rep := check(t, srv.URL, servercheck.Options{MaxRequests: 12})
	if rep.Requests > 12 || rep.Verdict != "incomplete" || rep.OK() {
		t.Errorf("budget 12: %d requests, verdict %s; want at most 12 and incomplete", rep.Requests, rep.Verdict)
	}

	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	stuck := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Agent: &testkit.Agent{Hold: hold}})
	start := time.Now()
	rep = check(t, stuck.URL, servercheck.Options{Timeout: 2 * time.Second})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a run with a 2s timeout against an agent that never answers took %v", took)
	}
	if rep.OK() {
		t.Errorf("verdict %s against an agent that never answers, want incomplete or fail", rep.Verdict)
	}
}

// tenantCard is a card that lists the server's tenant HTTP+JSON routes too, for
// tenant acme.
func tenantCard(base *string) func() string {
	return func() string {
		return `{"name":"echo","version":"1","supportedInterfaces":[` +
			`{"url":"` + *base + `/jsonrpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},` +
			`{"url":"` + *base + `/tenants","protocolBinding":"HTTP+JSON","protocolVersion":"1.0","tenant":"acme"}],` +
			`"capabilities":{"streaming":true,"extensions":[{"uri":"` + idempotency.ExtensionURI + `"}]}}`
	}
}

// Keys live in their tenant's scope: a server that shares them across tenants fails
// tenant-scope; the kit's default scope passes it.
func TestTenantScope(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope func(*http.Request, string) (string, error)
		want  servercheck.Status
	}{
		{"by tenant", nil, servercheck.Pass}, // the default: middleware.TenantRoutes
		{"shared", func(*http.Request, string) (string, error) { return "everyone", nil }, servercheck.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base string
			srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: testkit.WithCard(tenantCard(&base)),
				Middleware: middleware.Options{Scope: tc.scope}})
			base = srv.URL
			rep := check(t, srv.URL, servercheck.Options{Only: []string{"tenant-scope", "cross-interface"}})
			if r, _ := rep.Result("tenant-scope", ""); r.Status != tc.want {
				t.Errorf("tenant-scope: %s (%s), want %s", r.Status, r.Detail, tc.want)
			}
			if _, ok := rep.Result("cross-interface", ""); ok {
				t.Errorf("cross-interface ran, but no two interfaces share a tenant")
			}
		})
	}
}

// withThirdInterface serves a card listing a second JSON-RPC URL, /rpc-b, beside the
// server's two interfaces, and serves /rpc-b as the JSON-RPC endpoint, marked with
// the header X-Entry: b (for a scope that keeps that interface's keys apart).
func withThirdInterface(base *string) func(http.Handler) http.Handler {
	card := testkit.WithCard(func() string {
		return `{"name":"echo","version":"1","supportedInterfaces":[` +
			`{"url":"` + *base + testkit.JSONRPCPath + `","protocolBinding":"JSONRPC","protocolVersion":"1.0"},` +
			`{"url":"` + *base + testkit.RESTPath + `","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},` +
			`{"url":"` + *base + `/rpc-b","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],` +
			`"capabilities":{"streaming":true,"extensions":[{"uri":"` + idempotency.ExtensionURI + `"}]}}`
	})
	return func(next http.Handler) http.Handler {
		return card(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("X-Entry")
			if r.URL.Path == "/rpc-b" {
				r.URL.Path = testkit.JSONRPCPath
				r.Header.Set("X-Entry", "b")
			}
			next.ServeHTTP(w, r)
		}))
	}
}

// A retry goes through every other interface of the tenant, not one: a server that
// scopes its third interface's keys apart fails cross-interface there, and only
// there; the kit's default scope passes on all of them.
func TestCrossInterfaceEveryInterface(t *testing.T) {
	apart := func(r *http.Request, tenant string) (string, error) {
		if r.Header.Get("X-Entry") == "b" {
			return "b/" + tenant, nil
		}
		return tenant, nil
	}
	for _, tc := range []struct {
		name  string
		scope func(*http.Request, string) (string, error)
		want  [2]servercheck.Status // #1→#2, #1→#3
	}{
		{"one scope", nil, [2]servercheck.Status{servercheck.Pass, servercheck.Pass}},
		{"third apart", apart, [2]servercheck.Status{servercheck.Pass, servercheck.Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base string
			srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: withThirdInterface(&base),
				Middleware: middleware.Options{Scope: tc.scope}})
			base = srv.URL
			rep := check(t, srv.URL, servercheck.Options{Only: []string{"cross-interface"}})
			var got []servercheck.Status
			for _, r := range rep.Results {
				if r.ID == "cross-interface" {
					got = append(got, r.Status)
				}
			}
			if len(got) != 2 || got[0] != tc.want[0] || got[1] != tc.want[1] {
				t.Errorf("cross-interface #1→#2, #1→#3: %v, want %v", got, tc.want)
			}
			if rep.Requests > 1+3 {
				t.Errorf("%d requests, want the card, one send and two retries", rep.Requests)
			}
		})
	}
}
