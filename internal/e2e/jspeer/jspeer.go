// Package jspeer runs an A2A peer written with the official JS SDK (@a2a-js/sdk
// and express) for the kit's opt-in end-to-end tests: a server whose agent counts
// its runs (server.cjs), and a client that makes one keyed send (client.cjs).
//
// The tests that use it run only with IDEMPOTENCY_JS=1 (Require skips them
// otherwise) and need node and npm on PATH. The npm packages are installed with
// `npm ci` from this directory's package-lock.json into a cache outside the
// repository ($IDEMPOTENCY_JS_CACHE, else the user cache directory's a2akit-js),
// keyed by the lock file's hash, once; the scripts find them through NODE_PATH.
package jspeer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
)

// EnvVar turns the JS tests on: IDEMPOTENCY_JS=1.
const EnvVar = "IDEMPOTENCY_JS"

// CacheVar names the directory the npm packages are installed under; empty: the
// user cache directory's a2akit-js.
const CacheVar = "IDEMPOTENCY_JS_CACHE"

// Require skips tb unless IDEMPOTENCY_JS=1, and fails it when node or npm is
// missing then (the run asked for the JS tests, so it must not pass without them).
func Require(tb testing.TB) {
	tb.Helper()
	if os.Getenv(EnvVar) != "1" {
		tb.Skipf("the JS SDK tests are opt-in: set %s=1 (they need node and npm, and npm ci fetches @a2a-js/sdk once into a cache)", EnvVar)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Fatalf("%s=1 but %s is not on PATH: %v", EnvVar, tool, err)
		}
	}
}

// dir is this package's source directory: the scripts and the lock file.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

var installMu sync.Mutex

// Modules installs the npm packages of package-lock.json (npm ci) into the cache,
// once per lock file, and returns their node_modules directory. Concurrent test
// processes install into directories of their own and rename the first finished
// into place.
func Modules(tb testing.TB) string {
	tb.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	lock, err := os.ReadFile(filepath.Join(dir(), "package-lock.json"))
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache := os.Getenv(CacheVar)
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			tb.Fatalf("no cache directory for the npm packages (set %s): %v", CacheVar, err)
		}
		cache = filepath.Join(base, "a2akit-js")
	}
	final := filepath.Join(cache, hex.EncodeToString(sum[:8]))
	modules := filepath.Join(final, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		return modules
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp, err := os.MkdirTemp(cache, "install-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir(), f))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci (for %s) failed: %v\n%s", filepath.Join(dir(), "package-lock.json"), err, out)
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(modules); statErr != nil {
			tb.Fatalf("installing the npm packages into %s: %v", final, err)
		}
		// Another process installed them first.
	}
	return modules
}

// Options configure the server.
type Options struct {
	// Delay is how long the agent works on a task before completing it (the task
	// is published, working, first).
	Delay time.Duration
}

// Server is a running JS SDK server.
type Server struct {
	// URL is its base URL; the card is at URL/.well-known/agent-card.json and lists
	// JSON-RPC (URL/a2a/jsonrpc) and HTTP+JSON (URL/a2a/rest), each in A2A v1.0 and
	// v0.3.
	URL string
}

// Start starts the server on a free loopback port; it is killed when tb ends.
// Call Require first.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	modules := Modules(tb)
	logs := &testkit.Buffer{}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("JS server's log:\n%s", logs.String())
		}
	})
	// env sets the child's environment on top of the test's.
	c := testkit.StartCommand(tb, "env", logs, "NODE_PATH="+modules,
		"JSPEER_DELAY_MS="+strconv.FormatInt(opts.Delay.Milliseconds(), 10),
		"node", filepath.Join(dir(), "server.cjs"))
	return &Server{URL: c.URL}
}

// Runs is what the agent ran: in all, and by the text of the message.
type Runs struct {
	Total  int            `json:"total"`
	ByText map[string]int `json:"byText"`
}

// Runs returns the agent's runs so far.
func (s *Server) Runs(tb testing.TB) Runs {
	tb.Helper()
	resp, err := http.Get(s.URL + "/jspeer/runs")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var r Runs
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		tb.Fatalf("GET /jspeer/runs: %v", err)
	}
	return r
}

// Reply is what client.cjs printed: the task (its id and state) or the Message
// its send was answered with.
type Reply struct {
	Task    string `json:"task"`
	State   string `json:"state"`
	Message string `json:"message"`
}

// ErrSend is returned (wrapped, with the client's error output) when the JS
// client's send failed.
var ErrSend = errors.New("jspeer: the JS client's send failed")

// SendKeyed sends one blocking keyed message with the JS SDK's client to the A2A
// server at base (it reads the card there): key in the message's metadata under
// a2a-rust.com/idempotency-key, the extension listed. transport is "JSONRPC",
// "HTTP+JSON" or "" (the client's choice).
func SendKeyed(ctx context.Context, tb testing.TB, base, key, messageID, text, transport string) (Reply, error) {
	tb.Helper()
	args := []string{filepath.Join(dir(), "client.cjs"), base, key, messageID, text}
	if transport != "" {
		args = append(args, transport)
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+Modules(tb))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Reply{}, fmt.Errorf("%w: %v\n%s", ErrSend, err, stderr.String())
	}
	var r Reply
	line := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return Reply{}, fmt.Errorf("%w: it printed %q", ErrSend, out)
	}
	return r, nil
}
