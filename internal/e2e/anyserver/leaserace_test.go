package anyserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/sendtest"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/sqlstore"
)

// Issues 23 and 24: two sidecars share one PostgreSQL key table. A keyed blocking
// send runs 2.5 leases through sidecar A, and an identical retry goes to sidecar B
// at one of 100 offsets spread over the whole run (sendtest.LeaseRace): across every
// extension of the lease (a third of it, jittered) and every end the lease would have
// had without them. The server cannot stream (its card says so), so the key binds
// only when the run ends: until then only the lease keeps the retry from taking the
// claim over. The agent runs once in every trial.
//
// sendtest.TrialsVar sets the number of trials (the opt-in long version: say 1000);
// IDEMPOTENCY_PROXY_BIN runs another build of the sidecar (the one of 5c3bc2b, say,
// to see the race this fixes), and noExtendVar one whose leases are never extended,
// to see the test fail.
func TestTwoSidecarsOnePostgresLeaseRace(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	bin := proxyBin
	if b := os.Getenv("IDEMPOTENCY_PROXY_BIN"); b != "" {
		bin = b
	}
	if os.Getenv(noExtendVar) != "" {
		bin = buildNoExtend(t, "../../..", "./cmd/a2a-idempotency-proxy")
	}
	table := testkit.RandomName("kit_lease_race_")
	db, err := testdb.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Exec(`DROP TABLE IF EXISTS "` + table + `"`)
		db.Close()
	})
	up := startUpstream(t, "-no-streaming")
	sidecar := func() string {
		return startProcess(t, bin, "-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "", "-store", dsn,
			"-table", table, "-log-level", "ERROR", "-lease", raceLease.String(), "-replay-wait", "100ms").URL
	}
	race := sendtest.LeaseRace{First: sidecar(), Retry: sidecar(), Trials: 100, Run: raceRun,
		Text: func(i int) string { return fmt.Sprintf("wait %v trial %d", raceRun, i) },
		Runs: func(testing.TB) int64 { return up.runs(t) }}
	checkLeaseRace(t, race.Do(t))
	measureExtend(t, db, table)
}

// Issue 24: the stdlib example (examples/stdlib, run as built: an a2a-go server with
// the kit's adapter, its tasks and keys in one PostgreSQL database) twice, as two
// processes on one database, with a 2 s lease. The agent answers a Message after
// working 5 s, so the key binds only when the run ends. The same trials as the
// sidecars' (sendtest.LeaseRace), the runs read from each process's agent_runs: the
// agent runs once in every trial. noExtendVar builds the example with leases never
// extended, to see the test fail.
func TestTwoProcessesOnePostgresLeaseRace(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	bin := filepath.Join(t.TempDir(), "stdlib")
	if os.Getenv(noExtendVar) != "" {
		bin = buildNoExtend(t, "../../../examples", "./stdlib")
	} else {
		build(t, "../../../examples", "./stdlib", bin, "")
	}
	// The example's tables have fixed names: a schema of the test's own holds them.
	schema := testkit.RandomName("kit_lease_example_")
	db, err := testdb.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
		db.Close()
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	example := func() string {
		cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-store", u.String(), "-delay", raceRun.String(), "-reply", "message",
			"-lease", raceLease.String())
		return testkit.StartProcess(t, cmd, func(line string) (string, bool) {
			card, ok := strings.CutPrefix(line, "agent card:")
			return strings.TrimSuffix(strings.TrimSpace(card), "/.well-known/agent-card.json"), ok
		}).URL
	}
	a, b := example(), example()
	race := sendtest.LeaseRace{First: a, Retry: b, Trials: 100, Run: raceRun,
		Text: func(i int) string { return fmt.Sprintf("trial %d", i) },
		Runs: func(t testing.TB) int64 {
			var n int64
			for _, base := range []string{a, b} {
				runs, err := testkit.ReadRuns(context.Background(), http.DefaultClient, base+"/debug/vars", "")
				if err != nil {
					t.Fatal(err)
				}
				n += runs
			}
			return n
		}}
	checkLeaseRace(t, race.Do(t))
}

// The lease races' lease, and how long their agent works: 2.5 leases, over 7
// extensions.
const (
	raceLease = 2 * time.Second
	raceRun   = 5 * time.Second
)

// checkLeaseRace logs rep and fails t for each double run it saw.
func checkLeaseRace(t *testing.T, rep sendtest.LeaseRaceReport) {
	t.Helper()
	t.Logf("%v (retries at offsets 0 to %v of a %v run with a %v lease)", rep, raceRun, raceRun, raceLease)
	for _, d := range rep.Doubles {
		t.Error(d)
	}
}

// noExtendVar, when set, makes the lease races run builds whose leases are never
// extended (middleware/lease.go replaced by a build overlay that drops the keeper's
// first extension): they must then see double runs. No option turns extension off.
const noExtendVar = "IDEMPOTENCY_LEASE_NO_EXTEND"

// buildNoExtend builds pkg (in the module at dir) with leases never extended, and
// returns the binary.
func buildNoExtend(t *testing.T, dir, pkg string) string {
	t.Helper()
	src, err := filepath.Abs("../../../middleware/lease.go")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	const keep = "\tlk.schedule(first, extend)\n"
	if !bytes.Contains(code, []byte(keep)) {
		t.Fatalf("%s no longer schedules the first extension with %q: update buildNoExtend", src, keep)
	}
	tmp := t.TempDir()
	broken := filepath.Join(tmp, "lease.go")
	code = bytes.Replace(code, []byte(keep), []byte("\t_ = first // "+noExtendVar+": never extended\n"), 1)
	overlay := filepath.Join(tmp, "overlay.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{src: broken}})
	if err := os.WriteFile(broken, code, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, filepath.Base(pkg))
	build(t, dir, pkg, bin, overlay)
	t.Logf("%s: %s built with leases never extended", noExtendVar, pkg)
	return bin
}

// build builds pkg, in the module at dir, to out, with overlay when it is not empty.
func build(t *testing.T, dir, pkg, out, overlay string) {
	t.Helper()
	args := []string{"build", "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// measureExtend logs the latency of KeyIndex.Extend on the test's PostgreSQL, for
// the choice of the default lease.
func measureExtend(t *testing.T, db sqlstore.DB, table string) {
	index, err := sqlstore.New(db, sqlstore.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := idempotency.NewKey()
	cl, err := index.Claim(ctx, "", key, "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for range 200 {
		start := time.Now()
		if err := index.Extend(ctx, "", key, cl.Token, time.Minute); err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("Extend on PostgreSQL: p50 %v, p99 %v, max %v", took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}

// Issue 23, bug 2: the sidecar's upstream header timeout fires while the a2a-go
// server runs the agent (the request was written): the sidecar answers 502, and the
// key stays pending, so the retry a client makes on a 502 waits and gets 409; it does
// not run the agent a second time while the first run goes on.
func TestUpstreamTimeoutKeepsKeyPending(t *testing.T) {
	bin := proxyBin
	if b := os.Getenv("IDEMPOTENCY_PROXY_BIN"); b != "" {
		bin = b
	}
	up := startUpstream(t, "-no-streaming")
	base := startProcess(t, bin, "-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "ERROR", "-replay-wait", "100ms",
		"-upstream-header-timeout", "300ms").URL
	for _, b := range sendtest.Bindings {
		m := sendtest.NewMsg(b, false, "wait 1500ms hop "+string(b))
		first, err := sendtest.Send(context.Background(), base, m)
		if err != nil || first.Status != 502 {
			t.Fatalf("%s: first send: %v %v; want the sidecar's 502", b, first, err)
		}
		retry, err := sendtest.Send(context.Background(), base, m)
		if err != nil || retry.Status != 409 {
			t.Errorf("%s: retry after the 502: %v %v; want 409 (the first run goes on)", b, retry, err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	checkRuns(t, up, int64(len(sendtest.Bindings)))
}

// SPEC §8: a send the a2a-go server refused (-32602 for a message without parts)
// holds no key, also when the client reset the connection right after writing it:
// the detached forward reads the refusal and releases the key.
func TestRefusedSendHoldsNoKeyWhenClientLeft(t *testing.T) {
	up := startUpstream(t)
	index := memstore.New(memstore.Options{})
	base := startInProcess(t, index, up, kit{lease: time.Minute, replayWait: 100 * time.Millisecond}.options())
	for _, b := range sendtest.Bindings {
		key := idempotency.NewKey()
		msg := `{"messageId":"m-` + key[:8] + `","role":"ROLE_USER","parts":[],"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}`
		body, path := `{"message":`+msg+`}`, "/rest/message:send"
		if b == sendtest.JSONRPC {
			body, path = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":`+msg+`}}`, "/jsonrpc"
		}
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close() // a reset, right after writing
		deadline := time.Now().Add(3 * time.Second)
		for {
			_, held, err := index.Lookup(context.Background(), "", key)
			if err != nil {
				t.Fatal(err)
			}
			if !held {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server refused the send, but its key is still held after the client left", b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	checkRuns(t, up, 0)
}
