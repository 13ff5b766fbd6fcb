package cost_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// inProcess is a configuration of TestInProcessInstructions: a server (bare a2a-go,
// or the kit in front of it with memstore) and the bodies sent to it.
type inProcess struct {
	name  string
	kit   bool
	keyed bool
}

var inProcessConfigs = []inProcess{
	{"bare-unkeyed", false, false},
	{"bare-keyedbody", false, true},
	{"kit-unkeyed", true, false},
	{"kit-keyed-first", true, true},
}

// The child's settings: which configuration and binding, how many sends.
const (
	childEnv   = "IDEMPOTENCY_COST_CHILD"
	childNEnv  = "IDEMPOTENCY_COST_CHILD_SENDS"
	childStats = "IDEMPOTENCY_COST_CHILD_STATS"
	callgrindE = "IDEMPOTENCY_COST_CALLGRIND"
)

// TestInProcessInstructions runs TestInProcessChild under callgrind for every
// configuration and binding, at two counts of sends, and prints instructions per
// send; see the package documentation.
func TestInProcessInstructions(t *testing.T) {
	if os.Getenv(callgrindE) == "" {
		t.Skip("the callgrind harness is opt-in and slow: " + callgrindE + "=1 go test -v -run=InProcessInstructions -timeout=60m ./internal/e2e/cost")
	}
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skip("valgrind is not installed (apt-get install -y valgrind)")
	}
	hi := costEnv("IDEMPOTENCY_COST_CALLGRIND_SENDS", 200)
	lo := hi / 5
	bindings := wireclient.Bindings
	if b := os.Getenv("IDEMPOTENCY_COST_CALLGRIND_BINDING"); b != "" {
		bindings = []wireclient.Binding{wireclient.Binding(b)}
	}
	dir := t.TempDir()
	gogc := os.Getenv("IDEMPOTENCY_COST_GOGC")
	if gogc == "" {
		gogc = "off"
	}
	// instr returns the instructions, allocations and bytes allocated of one child
	// run of n sends.
	instr := func(cfg inProcess, b wireclient.Binding, n int) (total, mallocs, bytes float64) {
		out := filepath.Join(dir, fmt.Sprintf("callgrind.%s.%s.%d", cfg.name, strings.ReplaceAll(string(b), "+", ""), n))
		stats := out + ".stats"
		cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file="+out,
			os.Args[0], "-test.run=^TestInProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=2", "GOGC="+gogc,
			childEnv+"="+cfg.name+","+string(b), childNEnv+"="+strconv.Itoa(n), childStats+"="+stats)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("valgrind %s %s: %v\n%s", cfg.name, b, err, msg)
		}
		ir, err := callgrindTotal(out)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.ReadFile(stats)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(string(st), &mallocs, &bytes); err != nil {
			t.Fatalf("%s: %v", stats, err)
		}
		return float64(ir), mallocs, bytes
	}
	start := time.Now()
	type row struct {
		b                      wireclient.Binding
		cfg                    inProcess
		perReq, allocs, kbytes float64
	}
	var rows []row
	for _, b := range bindings {
		for _, cfg := range inProcessConfigs {
			i1, m1, b1 := instr(cfg, b, hi)
			i0, m0, b0 := instr(cfg, b, lo)
			d := float64(hi - lo)
			r := row{b, cfg, (i1 - i0) / d, (m1 - m0) / d, (b1 - b0) / d / 1024}
			rows = append(rows, r)
			fmt.Printf("%s %s: %.3f M instructions, %.0f allocations, %.1f KiB a send\n", b, cfg.name, r.perReq/1e6, r.allocs, r.kbytes)
		}
	}
	fmt.Printf("\ncallgrind, GOGC=%s, (%d sends − %d sends) / %d, one send at a time, in-process, %s\n\n", gogc, hi, lo, hi-lo,
		time.Since(start).Round(time.Second))
	fmt.Println("| binding | configuration | M instructions / send | allocations / send | KiB / send | vs bare unkeyed | vs bare fed the same keyed bodies |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		var unkeyed, keyedBody float64
		for _, o := range rows {
			if o.b == r.b && o.cfg.name == "bare-unkeyed" {
				unkeyed = o.perReq
			}
			if o.b == r.b && o.cfg.name == "bare-keyedbody" {
				keyedBody = o.perReq
			}
		}
		vsKeyed := "—"
		if r.cfg.kit && r.cfg.keyed {
			vsKeyed = fmt.Sprintf("**%+.1f %%**", 100*(r.perReq/keyedBody-1))
		}
		fmt.Printf("| %s | %s | %.3f | %.0f | %.1f | %+.1f %% | %s |\n", r.b, r.cfg.name, r.perReq/1e6, r.allocs, r.kbytes,
			100*(r.perReq/unkeyed-1), vsKeyed)
	}
	fmt.Println()
}

// callgrindTotal reads the total instruction count of a callgrind output file.
func callgrindTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"totals:", "summary:"} {
			if v, ok := strings.CutPrefix(line, p); ok {
				return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("%s: no totals line", path)
}

// TestInProcessChild is the child TestInProcessInstructions runs under callgrind: it
// serves the configured sends through the handler, one at a time, and exits.
func TestInProcessChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("run by TestInProcessInstructions only")
	}
	name, binding, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(os.Getenv(childNEnv))
	var cfg inProcess
	for _, c := range inProcessConfigs {
		if c.name == name {
			cfg = c
		}
	}
	if cfg.name == "" {
		t.Fatalf("no configuration %q", name)
	}
	h := inProcessHandler(t, cfg)
	wc := &wireclient.Client{BaseURL: "http://kit.test"}
	run := testkit.RandomName("ip")
	for i := range n {
		id := run + "-" + strconv.Itoa(i)
		s := wireclient.Send{Binding: wireclient.Binding(binding), MessageID: id, Text: "hello"}
		if cfg.keyed {
			s.Key = "key-" + id
		}
		req, err := wc.Request(context.Background(), s, s.Body())
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), taskMark) {
			t.Fatalf("%s send %d: HTTP %d: %.300s", cfg.name, i, rec.Code, rec.Body.Bytes())
		}
	}
	if path := os.Getenv(childStats); path != "" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if err := os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", ms.Mallocs, ms.TotalAlloc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// inProcessHandler is the server of cfg: a2a-go's JSON-RPC and HTTP+JSON handlers
// with the test kit's echo agent and a2a-go's in-memory task store, and, when cfg.kit,
// the kit in front with memstore and the adapter's Executor and FollowUpBinder, wired
// as the adapter's documentation says (no metrics, no logging).
func inProcessHandler(t *testing.T, cfg inProcess) http.Handler {
	log := slog.New(slog.DiscardHandler)
	store := testkit.NewStore()
	var exec a2asrv.AgentExecutor = testkit.Echo(0)
	opts := []a2asrv.RequestHandlerOption{a2asrv.WithTaskStore(store), a2asrv.WithLogger(log)}
	if cfg.kit {
		aopts := adapter.Options{Logger: log}
		exec = adapter.NewExecutor(exec, aopts)
		opts = append(opts, a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(store, aopts)))
	}
	rh := a2asrv.NewHandler(exec, opts...)
	mux := http.NewServeMux()
	mux.Handle(testkit.JSONRPCPath, a2asrv.NewJSONRPCHandler(rh))
	mux.Handle(testkit.RESTPath+"/", http.StripPrefix(testkit.RESTPath, a2asrv.NewRESTHandler(rh)))
	if !cfg.kit {
		return mux
	}
	mw, err := middleware.New(memstore.New(memstore.Options{}), middleware.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return mw(mux)
}
