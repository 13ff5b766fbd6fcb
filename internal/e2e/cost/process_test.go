package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// debugSource is compiled into every binary the harness runs (go build -overlay): a
// listener at $A2A_COST_DEBUG_ADDR with the process's allocation count and pprof.
const debugSource = `package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
)

func init() {
	addr := os.Getenv("A2A_COST_DEBUG_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mallocs", func(w http.ResponseWriter, r *http.Request) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.Write(strconv.AppendUint(nil, ms.Mallocs, 10))
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go http.Serve(ln, mux)
}
`

// costEnv reads an integer setting of the harness.
func costEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// buildWithDebug builds the main package pkg with debugSource added, into dir, as
// the binary name (default: the package's base name), with the files of extra (an
// overlay file's Replace map: path → replacement, "" deletes) replaced too.
func buildWithDebug(t *testing.T, dir, pkg, name string, extra map[string]string) string {
	t.Helper()
	if name == "" {
		name = filepath.Base(pkg)
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	pkgDir := strings.TrimSpace(string(out))
	src := filepath.Join(dir, name+"_debug.go")
	if err := os.WriteFile(src, []byte(debugSource), 0o644); err != nil {
		t.Fatal(err)
	}
	replace := map[string]string{filepath.Join(pkgDir, "zz_cost_debug.go"): src}
	for k, v := range extra {
		replace[k] = v
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": replace})
	ov := filepath.Join(dir, name+"_overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-overlay", ov, "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// proc is a server process of the harness.
type proc struct {
	name  string
	url   string
	debug string // base URL of its debug listener
	pid   int
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startProc starts bin and waits for the line of its standard output that names
// the URL it listens at.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	debug := freeAddr(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "A2A_COST_DEBUG_ADDR="+debug)
	cmd.Stderr = os.Stderr // an *os.File: the processes write to it directly, each Write whole
	c := testkit.StartProcess(t, cmd, nil)
	return &proc{name: name, url: c.URL, debug: "http://" + debug, pid: c.Process.Pid}
}

// cpu returns the CPU time the process's threads have run, from the scheduler's
// per-thread accounting (nanoseconds, unlike /proc/<pid>/stat's clock ticks).
func (p *proc) cpu(t *testing.T) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", p.pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	var sum int64
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return time.Duration(sum)
}

// mallocs returns the process's count of heap allocations.
func (p *proc) mallocs(t *testing.T) uint64 {
	resp, err := http.Get(p.debug + "/mallocs")
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		t.Fatalf("%s: mallocs %q", p.name, b)
	}
	return n
}

// config is one row of the table: a kind of body sent to a front process (or to the
// upstream directly, front nil) on a binding.
type config struct {
	name    string
	binding wireclient.Binding
	keyed   bool
	front   *proc
	base    string // what the "/hop" ratio divides by: the name of the hop's row
}

func (c config) label() string {
	body := "unkeyed"
	if c.keyed {
		body = "keyed"
	}
	return fmt.Sprintf("%s %s %s", c.binding, body, c.name)
}

// sample is what one run of a config measured.
type sample struct {
	frontCPU, upCPU       float64 // ms per request
	frontAllocs, upAllocs float64 // per request
	rps                   float64
}

// client sends the harness's load.
type client struct {
	hc   *http.Client
	conc int
	seq  atomic.Int64
	run  string
}

var taskMark = []byte(`"task":{`)

// load sends n requests of c, conc at a time, and returns how long they took.
func (cl *client) load(ctx context.Context, c config, base string, n int) (time.Duration, error) {
	wc := &wireclient.Client{BaseURL: base, HTTP: cl.hc}
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range cl.conc {
		wg.Go(func() {
			buf := new(bytes.Buffer)
			for next.Add(1) <= int64(n) {
				id := cl.run + "-" + strconv.FormatInt(cl.seq.Add(1), 10)
				s := wireclient.Send{Binding: c.binding, MessageID: id, Text: "hello"}
				if c.keyed {
					s.Key = "key-" + id
				}
				if err := post(ctx, wc, s, buf); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: %w", c.label(), err)
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), first
}

// post sends s and checks that the answer carries a task.
func post(ctx context.Context, wc *wireclient.Client, s wireclient.Send, buf *bytes.Buffer) error {
	req, err := wc.Request(ctx, s, s.Body())
	if err != nil {
		return err
	}
	resp, err := wc.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), taskMark) || bytes.Contains(buf.Bytes(), []byte(`"error":`)) {
		return fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	return nil
}

// measure runs n requests of c and reads the processes' CPU and allocations around
// them.
func measure(t *testing.T, cl *client, up *proc, c config, n int) sample {
	procs := []*proc{up}
	base := up.url
	if c.front != nil {
		procs = append(procs, c.front)
		base = c.front.url
	}
	m0 := make([]uint64, len(procs))
	c0 := make([]time.Duration, len(procs))
	for i, p := range procs {
		m0[i] = p.mallocs(t)
		c0[i] = p.cpu(t)
	}
	took, err := cl.load(context.Background(), c, base, n)
	if err != nil {
		t.Fatal(err)
	}
	var s sample
	for i, p := range procs {
		cpu := float64((p.cpu(t) - c0[i]).Microseconds()) / 1000 / float64(n)
		allocs := float64(p.mallocs(t)-m0[i]) / float64(n)
		if i == 0 {
			s.upCPU, s.upAllocs = cpu, allocs
		} else {
			s.frontCPU, s.frontAllocs = cpu, allocs
		}
	}
	s.rps = float64(n) / took.Seconds()
	return s
}

// TestProcessCost is the process harness; see the package documentation.
func TestProcessCost(t *testing.T) {
	if os.Getenv("IDEMPOTENCY_COST") == "" {
		t.Skip("the process cost harness is opt-in: IDEMPOTENCY_COST=1 go test -v -run=ProcessCost ./internal/e2e/cost")
	}
	if !testdb.SQLiteAvailable() {
		t.Skip("the sidecar's SQLite store needs cgo")
	}
	n := costEnv("IDEMPOTENCY_COST_REQUESTS", 1000)
	rounds := costEnv("IDEMPOTENCY_COST_ROUNDS", 3)
	conc := costEnv("IDEMPOTENCY_COST_CONC", 8)
	dir := t.TempDir()

	const proxyPkg = "github.com/a2akit/idempotency/cmd/a2a-idempotency-proxy"
	upBin := buildWithDebug(t, dir, "github.com/a2akit/idempotency/internal/e2e/upstream", "", nil)
	hopBin := buildWithDebug(t, dir, "github.com/a2akit/idempotency/internal/e2e/cost/hop", "", nil)
	proxyBin := buildWithDebug(t, dir, proxyPkg, "", nil)
	// A baseline build of the sidecar, for a before/after comparison in one run:
	// the same package with the files of an overlay replaced (go help build).
	var baseBin string
	if path := os.Getenv("IDEMPOTENCY_COST_BASELINE_OVERLAY"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var ov struct{ Replace map[string]string }
		if err := json.Unmarshal(b, &ov); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		baseBin = buildWithDebug(t, dir, proxyPkg, "proxy-baseline", ov.Replace)
	}

	up := startProc(t, "upstream", upBin)
	hop := startProc(t, "hop", hopBin, "-upstream", up.url)
	sidecar := func(bin, name, store, table string, extra ...string) *proc {
		args := append([]string{"-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "", "-store", store,
			"-table", table, "-log-level", "WARN"}, extra...)
		return startProc(t, name, bin, args...)
	}
	sqlite := sidecar(proxyBin, "sidecar-sqlite", filepath.Join(dir, "keys.db"), "idempotency_keys")
	sqliteOff := sidecar(proxyBin, "sidecar-sqlite-ebOff", filepath.Join(dir, "keys-off.db"), "idempotency_keys", "-early-bind", "off")
	var base *proc
	if baseBin != "" {
		base = sidecar(baseBin, "sidecar-baseline", filepath.Join(dir, "keys-base.db"), "idempotency_keys")
	}
	// SQLite's synchronous=NORMAL (no fsync at each commit in WAL mode: a commit
	// survives the process's crash, not the machine's) is measured beside the
	// default FULL, to show what the fsync costs; the sidecar keeps FULL unless its
	// -store URL says otherwise.
	sqliteNormal := sidecar(proxyBin, "sidecar-sqlite-syncNormal", "file:"+filepath.Join(dir, "keys-normal.db")+"?_synchronous=NORMAL", "idempotency_keys")
	var pgx, pq, rds *proc
	if dsn := os.Getenv("IDEMPOTENCY_POSTGRES_DSN"); dsn != "" {
		pgx = sidecar(proxyBin, "sidecar-postgres-pgx", dsn, testdb.ForTest(t, "postgres", 4).Table, "-postgres-driver", "pgx")
		pq = sidecar(proxyBin, "sidecar-postgres-pq", dsn, testdb.ForTest(t, "postgres", 4).Table, "-postgres-driver", "pq")
	} else {
		fmt.Println("note: IDEMPOTENCY_POSTGRES_DSN is not set: no PostgreSQL rows")
	}
	if u := os.Getenv("IDEMPOTENCY_REDIS_URL"); u != "" {
		// Fresh keys every run; they expire in ten minutes.
		rds = sidecar(proxyBin, "sidecar-redis", u, "idempotency_keys", "-key-max-age", "10m")
	} else {
		fmt.Println("note: IDEMPOTENCY_REDIS_URL is not set: no Redis rows")
	}

	// The hop is every ratio's baseline, in both bindings and both kinds of body;
	// the direct rows (the upstream's own CPU), early bind off, synchronous=NORMAL,
	// PostgreSQL and Redis are run on JSON-RPC only, to keep a round short.
	var configs []config
	for _, b := range wireclient.Bindings {
		rpc := b == wireclient.JSONRPC
		if rpc {
			configs = append(configs, config{name: "direct", binding: b}, config{name: "direct", binding: b, keyed: true})
		}
		configs = append(configs,
			config{name: "hop", binding: b, front: hop},
			config{name: "sidecar", binding: b, front: sqlite, base: "hop"},
			config{name: "hop", binding: b, keyed: true, front: hop},
			config{name: "sidecar-sqlite", binding: b, keyed: true, front: sqlite, base: "hop"},
		)
		if rpc {
			configs = append(configs,
				config{name: "sidecar-sqlite-ebOff", binding: b, keyed: true, front: sqliteOff, base: "hop"},
				config{name: "sidecar-sqlite-syncNormal", binding: b, keyed: true, front: sqliteNormal, base: "hop"})
			for _, p := range []*proc{pgx, pq, rds} {
				if p != nil {
					configs = append(configs, config{name: p.name, binding: b, keyed: true, front: p, base: "hop"})
				}
			}
		}
		if base != nil {
			configs = append(configs,
				config{name: "sidecar-baseline", binding: b, front: base, base: "hop"},
				config{name: "sidecar-sqlite-baseline", binding: b, keyed: true, front: base, base: "hop"})
		}
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * conc
	tr.DisableCompression = true
	defer tr.CloseIdleConnections()
	cl := &client{hc: &http.Client{Transport: tr}, conc: conc, run: testkit.RandomName("cost")}

	for _, c := range configs { // warm up: connections, statement caches, the sidecar's card read
		measure(t, cl, up, c, 50)
	}
	samples := make(map[string][]sample)
	ratios := make(map[string][]float64)
	start := time.Now()
	for r := range rounds {
		round := make(map[string]sample)
		// Interleave: each round runs every configuration, in an order rotated by
		// one each round, so that no configuration always follows the same one.
		for i := range configs {
			c := configs[(i+r)%len(configs)]
			s := measure(t, cl, up, c, n)
			round[c.label()] = s
			samples[c.label()] = append(samples[c.label()], s)
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done, %s, load average %s\n", r+1, rounds, time.Since(start).Round(time.Second), loadAverage())
		for _, c := range configs {
			if c.base == "" {
				continue
			}
			hopRow := config{name: c.base, binding: c.binding, keyed: c.keyed}
			ratios[c.label()] = append(ratios[c.label()], round[c.label()].frontCPU/round[hopRow.label()].frontCPU)
		}
	}
	fmt.Printf("\n%d rounds × %d requests a configuration, %d in flight, %s; load average %s\n\n", rounds, n, conc,
		time.Since(start).Round(time.Second), loadAverage())
	fmt.Println("| binding | body | front | front CPU ms/req | front CPU / hop | upstream CPU ms/req | front allocs/req | upstream allocs/req | req/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range configs {
		ss := samples[c.label()]
		col := func(f func(sample) float64) []float64 {
			v := make([]float64, len(ss))
			for i, s := range ss {
				v[i] = f(s)
			}
			return v
		}
		front, frontAllocs, ratio := "—", "—", "—"
		if c.front != nil {
			front = span(col(func(s sample) float64 { return s.frontCPU }), 3)
			frontAllocs = fmt.Sprintf("%.0f", median(col(func(s sample) float64 { return s.frontAllocs })))
		}
		if rs := ratios[c.label()]; rs != nil {
			ratio = "**" + span(rs, 2) + "**"
		}
		body := "unkeyed"
		if c.keyed {
			body = "keyed"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f |\n", c.binding, body, c.name, front, ratio,
			span(col(func(s sample) float64 { return s.upCPU }), 3), frontAllocs,
			median(col(func(s sample) float64 { return s.upAllocs })), median(col(func(s sample) float64 { return s.rps })))
	}
	fmt.Println()

	if dir := os.Getenv("IDEMPOTENCY_COST_PROFILE"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range configs {
			if c.binding != wireclient.JSONRPC || (c.front != sqlite && (base == nil || c.front != base)) {
				continue
			}
			profile(t, cl, up, c, dir)
		}
	}
}

// profile writes a CPU profile and an allocation profile of c's front process under
// load to dir, and prints the CPU profile's top frames.
func profile(t *testing.T, cl *client, up *proc, c config, dir string) {
	name := strings.NewReplacer(" ", "-", "+", "").Replace(c.label())
	cpuFile := filepath.Join(dir, name+".cpu.pprof")
	done := make(chan error, 1)
	go func() { done <- fetch(c.front.debug+"/debug/pprof/profile?seconds=6", cpuFile) }()
	m0 := c.front.mallocs(t)
	sent := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if err := fetch(c.front.debug+"/debug/pprof/allocs", filepath.Join(dir, name+".allocs.pprof")); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("profile of %s: %d requests, %.0f allocs/req; %s\n", c.label(), sent,
				float64(c.front.mallocs(t)-m0)/float64(sent), cpuFile)
			out, _ := exec.Command("go", "tool", "pprof", "-top", "-nodecount=30", cpuFile).CombinedOutput()
			fmt.Printf("%s\n", out)
			return
		default:
		}
		if _, err := cl.load(context.Background(), c, c.front.url, 200); err != nil {
			t.Fatal(err)
		}
		sent += 200
	}
}

// fetch writes what GET u answers to path.
func fetch(u, path string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, b)
	}
	return os.WriteFile(path, b, 0o644)
}

// span is the median of v and its range.
func span(v []float64, prec int) string {
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, median(s), prec, s[0], prec, s[len(s)-1])
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
