package anyserver

import (
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

// startProcess starts bin with args and waits for the line naming its URL
// ([testkit.Listening]).
func startProcess(t *testing.T, bin string, args ...string) *testkit.Command {
	t.Helper()
	return testkit.StartProcess(t, exec.Command(bin, args...), nil)
}

// upstream is the a2a-go server in another process.
type upstream struct{ *testkit.Command }

func startUpstream(t *testing.T, args ...string) upstream {
	return upstream{startProcess(t, upstreamBin, args...)}
}

// runs reads how many runs the upstream's agent started.
func (u upstream) runs(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get(u.URL + "/runs")
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
		args := append([]string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "",
			"-store", sqliteStore(t), "-log-level", "WARN"}, k.proxyArgs()...)
		return startProcess(t, proxyBin, args...).URL
	}},
	{"proxy-redis", func(t *testing.T, up upstream, k kit) string {
		args := append([]string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "",
			"-store", redisStore(t), "-log-level", "WARN"}, k.proxyArgs()...)
		return startProcess(t, proxyBin, args...).URL
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
	target, err := url.Parse(up.URL)
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
