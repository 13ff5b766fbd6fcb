package anyserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	st "github.com/a2akit/idempotency/internal/testkit/sendtest"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/sqlstore"
)

// Issues 23 and 24: two sidecars share one PostgreSQL key table. A keyed blocking
// send runs 2.5 leases through sidecar A, and an identical retry goes to sidecar B
// at one of 100 offsets spread over the whole run: across every extension of the
// lease (a third of it, jittered) and every end the lease would have had without
// them. The server cannot stream (its card says so), so the key binds only when the
// run ends: until then only the lease keeps the retry from taking the claim over.
// The agent runs once in every trial.
//
// IDEMPOTENCY_LEASE_TRIALS sets the number of trials (the opt-in long version: say
// 1000); IDEMPOTENCY_PROXY_BIN runs another build of the sidecar (the one of
// 5c3bc2b, say, to see the race this fixes).
func TestTwoSidecarsOnePostgresLeaseRace(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	trials := 100
	if n, err := strconv.Atoi(os.Getenv("IDEMPOTENCY_LEASE_TRIALS")); err == nil && n > 0 {
		trials = n
	}
	bin := proxyBin
	if b := os.Getenv("IDEMPOTENCY_PROXY_BIN"); b != "" {
		bin = b
	}
	const (
		lease = 2 * time.Second
		run   = 5 * time.Second
	)
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
		return startProcess(t, bin, "-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "", "-store", dsn,
			"-table", table, "-log-level", "ERROR", "-lease", lease.String(), "-replay-wait", "100ms").url
	}
	a, b := sidecar(), sidecar()

	// The trials run in waves of at most 50 at once, the offsets interleaved.
	offsets := make([]time.Duration, trials)
	for i := range offsets {
		offsets[i] = time.Duration(i) * run / time.Duration(trials)
	}
	var mu sync.Mutex
	var doubles []string
	outcomes := map[string]int{}
	const wave = 50
	for start := 0; start < trials; start += wave {
		before := up.runs(t)
		var wg sync.WaitGroup
		end := min(start+wave, trials)
		for i := start; i < end; i++ {
			off := offsets[(i*37)%trials]
			wg.Go(func() {
				m := st.NewMsg(st.JSONRPC, false, fmt.Sprintf("wait %v trial %d", run, i))
				first := make(chan error, 1)
				go func() {
					_, err := st.Send(context.Background(), a, m)
					first <- err
				}()
				time.Sleep(off)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				ans, err := st.Send(ctx, b, m)
				cancel()
				what := "error"
				switch {
				case err != nil:
				case ans.IsTask():
					what = "task"
				case ans.Status == 409:
					what = "409"
				default:
					what = ans.String()
				}
				if ferr := <-first; ferr != nil {
					mu.Lock()
					doubles = append(doubles, fmt.Sprintf("trial %d: first attempt failed: %v", i, ferr))
					mu.Unlock()
				}
				mu.Lock()
				outcomes[what]++
				mu.Unlock()
			})
		}
		wg.Wait()
		// Retries that took a claim over run the agent too: wait for those runs.
		time.Sleep(run / 2)
		if got := up.runs(t) - before; got != int64(end-start) {
			mu.Lock()
			doubles = append(doubles, fmt.Sprintf("trials %d to %d: the agent ran %d times for %d sends", start, end-1, got, end-start))
			mu.Unlock()
		}
	}
	t.Logf("%d trials, retries at offsets 0 to %v of a %v run with a %v lease: retry answers %v", trials, run, run, lease, outcomes)
	for _, d := range doubles {
		t.Error(d)
	}
	measureExtend(t, db, table)
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
	base := startProcess(t, bin, "-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "ERROR", "-replay-wait", "100ms",
		"-upstream-header-timeout", "300ms").url
	for _, b := range st.Bindings {
		m := st.NewMsg(b, false, "wait 1500ms hop "+string(b))
		first, err := st.Send(context.Background(), base, m)
		if err != nil || first.Status != 502 {
			t.Fatalf("%s: first send: %v %v; want the sidecar's 502", b, first, err)
		}
		retry, err := st.Send(context.Background(), base, m)
		if err != nil || retry.Status != 409 {
			t.Errorf("%s: retry after the 502: %v %v; want 409 (the first run goes on)", b, retry, err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	checkRuns(t, up, int64(len(st.Bindings)))
}

// SPEC §8: a send the a2a-go server refused (-32602 for a message without parts)
// holds no key, also when the client reset the connection right after writing it:
// the detached forward reads the refusal and releases the key.
func TestRefusedSendHoldsNoKeyWhenClientLeft(t *testing.T) {
	up := startUpstream(t)
	index := memstore.New(memstore.Options{})
	base := startInProcess(t, index, up, kit{lease: time.Minute, replayWait: 100 * time.Millisecond}.options())
	for _, b := range st.Bindings {
		key := idempotency.NewKey()
		msg := `{"messageId":"m-` + key[:8] + `","role":"ROLE_USER","parts":[],"metadata":{"` + idempotency.MetadataKey + `":"` + key + `"}}`
		body, path := `{"message":`+msg+`}`, "/rest/message:send"
		if b == st.JSONRPC {
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
