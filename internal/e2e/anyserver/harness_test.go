package anyserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// Binaries built once by TestMain.
var (
	upstreamBin string
	proxyBin    string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "anyserver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	upstreamBin = filepath.Join(dir, "upstream")
	proxyBin = filepath.Join(dir, "a2a-idempotency-proxy")
	for _, b := range []struct{ dir, pkg, out string }{
		{"..", "./upstream", upstreamBin},
		{"../../..", "./cmd/a2a-idempotency-proxy", proxyBin},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = b.dir
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", b.pkg+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is a subprocess that printed the URL it serves.
type process struct {
	cmd *exec.Cmd
	url string
}

// startProcess starts bin with args and waits for the line naming its URL: the
// first http:// URL after "listening".
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening "); ok {
				u, _, _ := strings.Cut(rest, ",")
				lines <- u
			}
		}
		close(lines)
	}()
	select {
	case u, ok := <-lines:
		if !ok {
			cmd.Wait()
			t.Fatalf("%s exited before it listened:\n%s", bin, stderr.String())
		}
		p.url = u
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s:\n%s", bin, stderr.String())
	}
	return p
}

// kill SIGKILLs the process and reaps it.
func (p *process) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// upstream is the a2a-go server in another process.
type upstream struct{ *process }

func startUpstream(t *testing.T, args ...string) upstream {
	return upstream{startProcess(t, upstreamBin, args...)}
}

// runs reads how many runs the upstream's agent started.
func (u upstream) runs(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get(u.url + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("GET /runs: %q: %v", b, err)
	}
	return n
}

// kit is the kit's configuration in a check.
type kit struct {
	lease, replayWait time.Duration
}

func (k kit) proxyArgs() []string {
	return []string{"-lease", k.lease.String(), "-replay-wait", k.replayWait.String()}
}

func (k kit) options() middleware.Options {
	return middleware.Options{Lease: k.lease, ReplayWait: k.replayWait}
}

// front is what the client talks to: the kit in front of an upstream.
type front struct {
	name  string
	start func(t *testing.T, up upstream, k kit) string // returns the base URL
}

// fronts are the two ways the kit stands in front of a server it cannot see inside.
var fronts = []front{
	{"proxy", func(t *testing.T, up upstream, k kit) string {
		args := append([]string{"-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "",
			"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "WARN"}, k.proxyArgs()...)
		return startProcess(t, proxyBin, args...).url
	}},
	{"middleware", func(t *testing.T, up upstream, k kit) string {
		return startInProcess(t, memstore.New(memstore.Options{}), up, k.options())
	}},
}

// startInProcess serves the middleware over index in front of an
// httputil.ReverseProxy to up, in this process.
func startInProcess(t *testing.T, index idempotency.KeyIndex, up upstream, opts middleware.Options) string {
	t.Helper()
	target, err := url.Parse(up.url)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, FlushInterval: -1}
	idem, err := middleware.New(index, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(idem(rp))
	t.Cleanup(srv.Close)
	return srv.URL
}

// binding is an A2A v1.0 binding as the upstream serves it.
type binding string

const (
	jsonrpc binding = "JSONRPC"
	rest    binding = "HTTP+JSON"
)

var bindings = []binding{jsonrpc, rest}

// msg is one keyed send.
type msg struct {
	b         binding
	streaming bool
	id, key   string
	text      string
}

func newMsg(t *testing.T, b binding, streaming bool, text string) msg {
	return msg{b: b, streaming: streaming, id: "m-" + idempotency.NewKey()[:12], key: idempotency.NewKey(), text: text}
}

func (m msg) request(ctx context.Context, base string) *http.Request {
	message := map[string]any{"messageId": m.id, "role": "ROLE_USER", "parts": []any{map[string]any{"text": m.text}},
		"metadata": map[string]any{idempotency.MetadataKey: m.key}, "extensions": []string{idempotency.ExtensionURI}}
	var body any = map[string]any{"message": message}
	path := "/rest/message:send"
	if m.streaming {
		path = "/rest/message:stream"
	}
	if m.b == jsonrpc {
		method := "SendMessage"
		if m.streaming {
			method = "SendStreamingMessage"
		}
		body = map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": body}
		path = "/jsonrpc"
	}
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	if m.streaming {
		req.Header.Set("Accept", "text/event-stream")
	}
	return req
}

// answer is one answer, or one event of a streamed answer.
type answer struct {
	status     int
	retryAfter string
	kind       string // task, message, statusUpdate, artifactUpdate, error
	taskID     string
	state      string
	raw        string
}

func (a answer) String() string {
	return fmt.Sprintf("HTTP %d %s task=%s state=%s: %.300s", a.status, a.kind, a.taskID, a.state, a.raw)
}

// parse reads one answer body or event's data.
func parse(status int, data []byte) answer {
	a := answer{status: status, raw: string(data)}
	var env map[string]json.RawMessage
	if json.Unmarshal(data, &env) != nil {
		a.kind = "unreadable"
		return a
	}
	if _, ok := env["jsonrpc"]; ok {
		if e, ok := env["error"]; ok {
			a.kind, a.raw = "error", string(e)
			return a
		}
		if json.Unmarshal(env["result"], &env) != nil {
			a.kind = "unreadable"
			return a
		}
	}
	var obj struct {
		ID     string `json:"id"`
		TaskID string `json:"taskId"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	for _, k := range []string{"task", "message", "statusUpdate", "artifactUpdate", "error"} {
		if raw, ok := env[k]; ok {
			a.kind = k
			json.Unmarshal(raw, &obj)
			a.taskID, a.state = obj.TaskID, obj.Status.State
			if k == "task" {
				a.taskID = obj.ID
			}
			return a
		}
	}
	a.kind = "unknown"
	return a
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}

// send sends m unary and returns the answer.
func send(ctx context.Context, base string, m msg) (answer, error) {
	resp, err := client.Do(m.request(ctx, base))
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := parse(resp.StatusCode, b)
	a.retryAfter = resp.Header.Get("Retry-After")
	return a, nil
}

// stream is a streamed answer being read.
type stream struct {
	resp *http.Response
	sc   *bufio.Scanner
}

// openStream sends m streaming.
func openStream(ctx context.Context, base string, m msg) (*stream, error) {
	resp, err := client.Do(m.request(ctx, base))
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("not a stream: %v", parse(resp.StatusCode, b))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return &stream{resp: resp, sc: sc}, nil
}

// next returns the next event, or io.EOF at the end of the stream.
func (s *stream) next() (answer, error) {
	var data []byte
	for s.sc.Scan() {
		line := s.sc.Bytes()
		if len(line) == 0 {
			if data != nil {
				return parse(s.resp.StatusCode, data), nil
			}
			continue
		}
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimSpace(d)...)
		}
	}
	if data != nil {
		return parse(s.resp.StatusCode, data), nil
	}
	if err := s.sc.Err(); err != nil {
		return answer{}, err
	}
	return answer{}, io.EOF
}

func (s *stream) close() { s.resp.Body.Close() }

// retryUntil sends m unary until check accepts an answer or timeout passes, and
// returns the accepted answer.
func retryUntil(t *testing.T, base string, m msg, timeout time.Duration, check func(answer) bool) answer {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last answer
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		a, err := send(ctx, base, m)
		cancel()
		if err == nil && check(a) {
			return a
		}
		last, lastErr = a, err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no accepted answer within %v; last: %v, %v", timeout, last, lastErr)
	return answer{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
