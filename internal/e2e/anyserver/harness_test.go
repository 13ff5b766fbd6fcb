package anyserver

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/sendtest"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/redisstore/redistest"
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
	if err := sendtest.Markers.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// process is a subprocess that printed the URL it serves.
type process struct {
	cmd *exec.Cmd
	url string
	// line is the line that named the URL.
	line string
}

// startProcess starts bin with args and waits for the line naming its URL: the
// first http:// URL after "listening".
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	return startProcessURL(t, func(line string) (string, bool) {
		_, rest, ok := strings.Cut(line, "listening ")
		url, _, _ := strings.Cut(rest, ",")
		return url, ok
	}, bin, args...)
}

// startProcessURL starts bin with args and waits for the first line of its stdout
// from which urlOf reads the URL it serves.
func startProcessURL(t *testing.T, urlOf func(line string) (string, bool), bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testkit.Buffer
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
			if _, ok := urlOf(sc.Text()); ok {
				lines <- sc.Text()
			}
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			cmd.Wait()
			t.Fatalf("%s exited before it listened:\n%s", bin, stderr.String())
		}
		p.url, _ = urlOf(line)
		p.line = line
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

// fronts are the ways the kit stands in front of a server it cannot see inside: the
// proxy on each of its kinds of store, and the middleware.
var fronts = []front{
	{"proxy", func(t *testing.T, up upstream, k kit) string {
		args := append([]string{"-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "",
			"-store", sqliteStore(t), "-log-level", "WARN"}, k.proxyArgs()...)
		return startProcess(t, proxyBin, args...).url
	}},
	{"proxy-redis", func(t *testing.T, up upstream, k kit) string {
		args := append([]string{"-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "",
			"-store", redisStore(t), "-log-level", "WARN"}, k.proxyArgs()...)
		return startProcess(t, proxyBin, args...).url
	}},
	{"middleware", func(t *testing.T, up upstream, k kit) string {
		return startInProcess(t, memstore.New(memstore.Options{}), up, k.options())
	}},
}

// proxyStores are the proxy's kinds of store, for the checks that restart a proxy
// on its store or run two on one: each returns a fresh store for t.
var proxyStores = []struct {
	name string
	open func(t *testing.T) string
}{{"sqlite", sqliteStore}, {"redis", redisStore}}

// sqliteStore returns a fresh SQLite file for -store.
func sqliteStore(t *testing.T) string { return filepath.Join(t.TempDir(), "keys.db") }

// redisStore returns the URL of the test Redis (IDEMPOTENCY_REDIS_URL; the test is
// skipped when it is unset) with a key prefix of t's own, for -store.
func redisStore(t *testing.T) string {
	u := redistest.URL(t)
	return u + "?prefix=" + redistest.Prefix(t, u)
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
	// As a client that resolves the agent card does: the middleware learns from it
	// whether the server streams.
	resp, err := http.Get(srv.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return srv.URL
}
