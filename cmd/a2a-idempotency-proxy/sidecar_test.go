//go:build cgo

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// sidecar is the proxy run in-process by run, as main runs it.
type sidecar struct {
	url, admin string
	logs       *testkit.Buffer
}

// startSidecar runs the proxy with args after defaults for a test (free loopback
// ports, a fresh SQLite file) and stops it when the test ends.
func startSidecar(t *testing.T, env map[string]string, args ...string) *sidecar {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs := &testkit.Buffer{}
	done := make(chan error, 1)
	args = append([]string{"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-sweep-interval", "0"}, args...)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, pw, logs)
		pw.Close()
	}()
	lines := firstLines(pr)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if t.Failed() {
			t.Logf("proxy logs:\n%s", logs.String())
		}
	})
	select {
	case line := <-lines:
		_, rest, _ := strings.Cut(line, "listening ")
		s := &sidecar{logs: logs}
		s.url, _, _ = strings.Cut(rest, ",")
		_, rest, _ = strings.Cut(rest, "admin ")
		s.admin, _, _ = strings.Cut(rest, ",")
		return s
	case err := <-done:
		t.Fatalf("the proxy stopped before it listened: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy did not listen within 30s:\n%s", logs.String())
	}
	return nil
}

// firstLines reads r to its end, so that the process writing it never blocks, and
// returns a channel of one line's room: the first line read is kept there, and a
// later line only when the channel was emptied since. A test reads the proxy's
// startup line from it.
func firstLines(r io.Reader) <-chan string {
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	return lines
}

// restSend is a keyed HTTP+JSON v1.0 SendMessage body: message id, key and text,
// no tenant in the body.
func restSend(t *testing.T, messageID, key, text string) []byte {
	t.Helper()
	meta, exts, err := idempotency.SetKey(nil, nil, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"message": map[string]any{
		"messageId": messageID, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}},
		"metadata": meta, "extensions": exts,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to url with header pairs, and returns the status and body.
func post(t *testing.T, url string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req, header...)
}

// do sends req with header pairs added to its header, and returns the status and
// body of the answer.
func do(t *testing.T, req *http.Request, header ...string) (int, []byte) {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// taskID reads the task id of a v1.0 SendMessage answer ({"task":{...}}), or "".
func taskID(body []byte) string {
	var a struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	json.Unmarshal(body, &a)
	return a.Task.ID
}

// Issue 26: the sidecar scoped keys by the body's tenant alone, so one keyed body
// sent to /tenants/acme/message:send and then to /tenants/globex/message:send handed
// globex acme's task. A real a2a-go server routes them to two tenants: two runs, two
// tasks, and each tenant's retry gets its own.
func TestTenantPathsAreKeySpaces(t *testing.T) {
	up := testkit.NewServer(t, testkit.Config{})
	p := startSidecar(t, nil, "-upstream", up.URL)
	body := restSend(t, "msg-shared-1", "key-shared-by-two-tenants-0001", "hello")
	ids := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		status, answer := post(t, p.url+"/tenants/"+tenant+"/message:send", body)
		if status != http.StatusOK || taskID(answer) == "" {
			t.Fatalf("%s: %d %s", tenant, status, answer)
		}
		ids[tenant] = taskID(answer)
	}
	if ids["acme"] == ids["globex"] {
		t.Fatalf("both tenants got task %s: globex was handed acme's task", ids["acme"])
	}
	if runs := up.Runs(); runs != 2 {
		t.Errorf("the agent ran %d times, want 2 (once per tenant)", runs)
	}
	for _, tenant := range []string{"globex", "acme"} {
		status, answer := post(t, p.url+"/tenants/"+tenant+"/message:send", body)
		if status != http.StatusOK || taskID(answer) != ids[tenant] {
			t.Errorf("%s's retry: %d %s; want its own task %s", tenant, status, answer, ids[tenant])
		}
	}
	// A JSON-RPC retry naming the tenant in its params meets the HTTP+JSON send of
	// that tenant's path: one key space per tenant, whatever the binding.
	meta, exts, _ := idempotency.SetKey(nil, nil, "key-shared-by-two-tenants-0001")
	rpc, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": map[string]any{
		"tenant": "globex", "message": map[string]any{"messageId": "msg-shared-1", "role": "ROLE_USER",
			"parts": []any{map[string]any{"text": "hello"}}, "metadata": meta, "extensions": exts}}})
	status, answer := post(t, p.url+testkit.JSONRPCPath, rpc)
	var res struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if json.Unmarshal(answer, &res); status != http.StatusOK || res.Result.Task.ID != ids["globex"] {
		t.Errorf("JSON-RPC retry with params.tenant globex: %d %s; want globex's task %s", status, answer, ids["globex"])
	}
	if runs := up.Runs(); runs != 2 {
		t.Errorf("after the retries the agent ran %d times, want 2", runs)
	}
}

// With -principal-header, every key is bound to its caller: another caller's retry
// of alice's key and message is refused as "already held" (nothing of alice's task
// reaches bob), alice's own retry gets her task, and a keyed send without the header
// is refused before anything runs.
func TestPrincipalHeaderBindsKeysToCallers(t *testing.T) {
	up := testkit.NewServer(t, testkit.Config{})
	p := startSidecar(t, nil, "-upstream", up.URL, "-principal-header", "X-Authenticated-User")
	body := restSend(t, "msg-principal-1", "key-of-two-callers-000000001", "hi")
	url := p.url + "/tenants/acme/message:send"
	_, a1 := post(t, url, body, "X-Authenticated-User", "alice")
	status, b1 := post(t, url, body, "X-Authenticated-User", "bob")
	_, a2 := post(t, url, body, "X-Authenticated-User", "alice")
	if taskID(a1) == "" || taskID(a2) != taskID(a1) {
		t.Errorf("alice %s, alice's retry %s: want her task twice", a1, a2)
	}
	if status != http.StatusBadRequest || !strings.Contains(string(b1), "already held") || strings.Contains(string(b1), taskID(a1)) {
		t.Errorf("bob's retry of alice's key: %d %s; want 400 already held, without her task", status, b1)
	}
	status, answer := post(t, url, restSend(t, "msg-principal-2", "key-without-a-caller-0000001", "hi"))
	if status != http.StatusBadRequest || !strings.Contains(string(answer), "X-Authenticated-User") {
		t.Errorf("keyed send without the header: %d %s; want 400 naming the header", status, answer)
	}
	if runs := up.Runs(); runs != 1 {
		t.Errorf("the agent ran %d times, want 1", runs)
	}
}

// getCard asks the proxy for its card with host as the Host and header pairs.
func getCard(t *testing.T, p *sidecar, host string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+agentCardPath, nil)
	req.Host = host
	status, b := do(t, req, header...)
	return status, string(b)
}

// interfaceURLs returns the interface URLs of a v1.0 card.
func interfaceURLs(t *testing.T, card string) []string {
	t.Helper()
	var c struct {
		SupportedInterfaces []struct {
			URL string `json:"url"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal([]byte(card), &c); err != nil || len(c.SupportedInterfaces) == 0 {
		t.Fatalf("not a card with interfaces: %v\n%s", err, card)
	}
	var urls []string
	for _, i := range c.SupportedInterfaces {
		urls = append(urls, i.URL)
	}
	return urls
}

// Issue 28: the card advertised whatever Host a client sent. It never shows a host
// the client chose: with -public-url that URL, whatever the Host and forwarded
// headers; without it, X-Forwarded-*/Forwarded only from -trusted-proxies peers, a
// loopback Host, or a refusal with a log line.
func TestCardNeverShowsTheClientsHost(t *testing.T) {
	up := testkit.NewServer(t, testkit.Config{})
	evil := []string{"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https", "Forwarded", "host=evil.example;proto=https"}
	checkURLs := func(t *testing.T, what, card, wantPrefix string) {
		t.Helper()
		if strings.Contains(card, "evil.example") {
			t.Errorf("%s: the card shows the client's host:\n%s", what, card)
		}
		for _, u := range interfaceURLs(t, card) {
			if !strings.HasPrefix(u, wantPrefix) {
				t.Errorf("%s: interface URL %s, want it under %s", what, u, wantPrefix)
			}
		}
	}

	t.Run("public-url", func(t *testing.T) {
		p := startSidecar(t, nil, "-upstream", up.URL, "-public-url", "https://agents.example.com/echo", "-trusted-proxies", "127.0.0.1")
		for _, host := range []string{"evil.example:443", "localhost"} {
			status, card := getCard(t, p, host, evil...)
			if status != http.StatusOK {
				t.Fatalf("Host %s: %d %s", host, status, card)
			}
			checkURLs(t, "Host "+host, card, "https://agents.example.com/echo/")
		}
	})

	t.Run("untrusted", func(t *testing.T) {
		// 127.0.0.1 (this test) is not among the trusted proxies.
		p := startSidecar(t, nil, "-upstream", up.URL, "-trusted-proxies", "10.0.0.0/8")
		status, card := getCard(t, p, "evil.example:443", evil...)
		if status != http.StatusServiceUnavailable || strings.Contains(card, "evil.example") || !strings.Contains(card, "-public-url") {
			t.Errorf("foreign Host, forwarded headers from an untrusted peer: %d %s; want 503 naming -public-url", status, card)
		}
		status, card = getCard(t, p, "evil.example:443")
		if status != http.StatusServiceUnavailable {
			t.Errorf("foreign Host: %d %s; want 503", status, card)
		}
		if !strings.Contains(p.logs.String(), "agent card request refused") {
			t.Errorf("no log line says why the card was refused:\n%s", p.logs.String())
		}
		// A developer's loopback Host is served, and untrusted headers still ignored.
		host := strings.TrimPrefix(p.url, "http://")
		status, card = getCard(t, p, host, evil...)
		if status != http.StatusOK {
			t.Fatalf("loopback Host: %d %s", status, card)
		}
		checkURLs(t, "loopback Host with untrusted forwarded headers", card, "http://"+host+"/")
	})

	t.Run("trusted", func(t *testing.T) {
		p := startSidecar(t, nil, "-upstream", up.URL, "-trusted-proxies", "127.0.0.0/8")
		// The trusted peer's value is the last one; a value the client put before it
		// is not read.
		status, card := getCard(t, p, "evil.example:443", "X-Forwarded-Host", "evil.example, agents.example.com",
			"X-Forwarded-Proto", "http, https")
		if status != http.StatusOK {
			t.Fatalf("trusted X-Forwarded-*: %d %s", status, card)
		}
		checkURLs(t, "trusted X-Forwarded-*", card, "https://agents.example.com/")
		status, card = getCard(t, p, "evil.example:443", "Forwarded", `for=1.2.3.4;host=evil.example, for=10.1.1.1;host="agents.example.com";proto=https`)
		if status != http.StatusOK {
			t.Fatalf("trusted Forwarded: %d %s", status, card)
		}
		checkURLs(t, "trusted Forwarded", card, "https://agents.example.com/")
		// A trusted peer that names no host, or a malformed one, does not make the
		// client's Host the public URL.
		for _, h := range [][]string{nil, {"X-Forwarded-Host", "agents.example.com/evil.example"}} {
			if status, card := getCard(t, p, "evil.example:443", h...); status != http.StatusServiceUnavailable {
				t.Errorf("trusted peer, headers %q: %d %s; want 503", h, status, card)
			}
		}
	})
}

// Issue 28: outcome series appeared only once seen, so an alert on their increase
// missed the first incident. A scrape right after start has every outcome at 0, the
// build, the Go runtime and the process, sends in flight and upstream durations.
func TestMetricsAtStart(t *testing.T) {
	up := testkit.NewServer(t, testkit.Config{})
	p := startSidecar(t, nil, "-upstream", up.URL)
	resp, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	text := string(body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	for _, o := range []string{"claimed", "released", "failed", "replayed", "in_flight", "conflict", "refused",
		"unsupported", "unavailable", "task_gone", "internal", "abandoned", "unreplayable"} {
		for _, b := range []string{"JSONRPC", "HTTP+JSON"} {
			for _, v := range []string{"1.0", "0.3"} {
				for _, s := range []string{"false", "true"} {
					line := `a2a_idempotency_sends_total{binding="` + b + `",outcome="` + o + `",protocol_version="` + v + `",streaming="` + s + `"} 0`
					if !strings.Contains(text, line+"\n") {
						t.Errorf("/metrics at start lacks %s", line)
					}
				}
			}
		}
	}
	for _, want := range []string{
		`a2a_idempotency_keys_bound_total{bound_by="answer"} 0`,
		`a2a_idempotency_proxy_sends_in_flight 0`,
		`a2a_idempotency_proxy_upstream_errors_total 0`,
		`a2a_idempotency_proxy_sweeps_total{result="failed"} 0`,
		`# TYPE a2a_idempotency_proxy_build_info gauge`,
		`# TYPE a2a_idempotency_proxy_upstream_request_duration_seconds histogram`,
		// The card read at start went upstream.
		`a2a_idempotency_proxy_upstream_request_duration_seconds_count{code="200",method="get"} 1`,
		`# TYPE go_goroutines gauge`,
		`# TYPE process_cpu_seconds_total counter`,
		`# TYPE process_resident_memory_bytes gauge`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics at start lacks %q", want)
		}
	}
	if !strings.Contains(text, `a2a_idempotency_proxy_build_info{goversion="go`) {
		t.Errorf("/metrics has no build info")
	}
	// Prometheus naming: counters end in _total, no label is "version" alone for
	// the protocol, durations in seconds.
	for line := range strings.Lines(text) {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(name)
			if f[1] == "counter" && !strings.HasSuffix(f[0], "_total") {
				t.Errorf("counter %s does not end in _total", f[0])
			}
			if strings.Contains(f[0], "duration") && !strings.HasSuffix(f[0], "_seconds") {
				t.Errorf("duration %s is not in seconds", f[0])
			}
		}
		if strings.HasPrefix(line, "a2a_idempotency_sends_total{") && strings.Contains(line, ",version=") {
			t.Errorf("a sends series has a bare version label: %s", line)
		}
	}
}

// countingUpstream counts the request body bytes it received, by path.
type countingUpstream struct {
	mu  sync.Mutex
	got map[string]int64
}

func (u *countingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.got[r.URL.Path] += n
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{}`))
}

func (u *countingUpstream) received(path string) int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.got[path]
}

// Issue 28: -max-body-bytes bounded only bodies that start with '{' (a 300 MiB body
// starting with '[' reached the upstream whole). Every body forwarded is bounded,
// announced or streamed, and answered 413 in the binding's shape; -unbounded-paths
// exempts uploads.
func TestBodyLimit(t *testing.T) {
	u := &countingUpstream{got: map[string]int64{}}
	srv := httptestServer(t, u)
	const limit = 4096
	p := startSidecar(t, nil, "-upstream", srv, "-max-body-bytes", "4096", "-unbounded-paths", "/upload/")
	big := append([]byte("["), bytes.Repeat([]byte(`"x",`), 300<<10/4)...)
	for _, c := range []struct {
		path, shape string
		chunked     bool
	}{
		{"/jsonrpc", `"jsonrpc":"2.0"`, false},
		{"/jsonrpc", `"jsonrpc":"2.0"`, true},
		{"/tenants/acme/message:send", `"status":"INVALID_ARGUMENT"`, false},
		{"/tenants/acme/message:stream", `"status":"INVALID_ARGUMENT"`, true},
		{"/", `"code":-32600`, true},
	} {
		var body io.Reader = bytes.NewReader(big)
		if c.chunked {
			body = io.MultiReader(bytes.NewReader(big)) // no length: sent chunked
		}
		req, _ := http.NewRequest(http.MethodPost, p.url+c.path, body)
		req.Header.Set("Content-Type", "application/json")
		status, answer := do(t, req)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(answer), c.shape) {
			t.Errorf("%s (chunked %v): %d %s; want 413 with %s", c.path, c.chunked, status, answer, c.shape)
		}
		if got := u.received(c.path); got > limit {
			t.Errorf("%s (chunked %v): the upstream received %d bytes, over the limit %d", c.path, c.chunked, got, limit)
		}
	}
	// A JSON object over the limit gets the middleware's own 413, nothing forwarded.
	status, answer := post(t, p.url+"/tenants/acme/message:send", append([]byte(`{"message":{"parts":[{"text":"`), bytes.Repeat([]byte("y"), 8192)...))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(answer), `"status":"INVALID_ARGUMENT"`) {
		t.Errorf("JSON object over the limit: %d %s", status, answer)
	}
	// Within the limit, and under -unbounded-paths, bodies pass whole.
	if status, _ := post(t, p.url+"/jsonrpc-small", big[:limit]); status != http.StatusOK || u.received("/jsonrpc-small") != limit {
		t.Errorf("a body of exactly the limit: %d, upstream got %d bytes", status, u.received("/jsonrpc-small"))
	}
	if status, _ := post(t, p.url+"/upload/file", big); status != http.StatusOK || u.received("/upload/file") != int64(len(big)) {
		t.Errorf("upload under -unbounded-paths: %d, upstream got %d of %d bytes", status, u.received("/upload/file"), len(big))
	}
}

// httptestServer serves h on loopback for the test and returns its URL.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
