package faulttest_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/e2e/loadtest"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/middleware"
)

// longVar selects the long form: IDEMPOTENCY_LONG=1.
const longVar = "IDEMPOTENCY_LONG"

// proxy is a TCP proxy on loopback that can cut every connection through it and
// refuse new ones until restored: to the kit, PostgreSQL going down and coming back,
// while the real server, shared with other tests, does not notice.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

// pipe copies from src to dst until either fails, then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *proxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// PostgreSQL cut off (every connection dropped, new ones refused) and restored, twice,
// in the middle of a load of keyed sends with duplicates, conflicts and drops: sends
// during the cut are refused (503), no key runs the agent twice, every answer for a
// key names one task, and after the cut the service answers every key.
func TestPostgresCutMidLoad(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", testkit.PostgresDSNVar, err)
	}
	target := u.Host
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := newProxy(t, target)
	u.Host = p.addr()

	table := testkit.RandomName("kit_cut_")
	ix, err := testdb.Open(context.Background(), u.String(), table, 16)
	if err != nil {
		t.Fatalf("%s is set but the database is unreachable through the proxy: %v", testkit.PostgresDSNVar, err)
	}
	t.Cleanup(func() {
		defer ix.Close()
		if err := ix.Drop(context.Background()); err != nil {
			t.Errorf("drop %s: %v", table, err)
		}
	})
	// A short lease: a claim whose statement committed while its answer was cut off is
	// taken over by a retry after it.
	srv := testkit.NewServer(t, testkit.Config{Agent: testkit.Echo(5 * time.Millisecond), Index: ix,
		Middleware: middleware.Options{Lease: time.Second, IndexTimeout: time.Second}})

	// The load runs for its whole Duration (Requests does not bound it first), and the
	// cuts fall inside it.
	cfg := loadtest.Config{BaseURL: srv.URL, Clients: 16, Requests: 1 << 30, Duration: 4 * time.Second,
		Settle: 30 * time.Second, TolerateErrors: true}
	cuts, cutFor := 2, 500*time.Millisecond
	if os.Getenv(longVar) != "" {
		cfg.Clients, cfg.Duration, cuts = 64, time.Minute, 10
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cutsDone := make(chan struct{})
	go func() {
		defer close(cutsDone)
		every := cfg.Duration / time.Duration(cuts+1)
		for range cuts {
			select {
			case <-time.After(every - cutFor):
			case <-ctx.Done():
				return
			}
			p.cut()
			time.Sleep(cutFor)
			p.restore()
		}
	}()
	rep, err := loadtest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-cutsDone
	p.restore()
	t.Log("\n" + rep.String())
	if !rep.OK() {
		t.Fatalf("%d violations", len(rep.Violations))
	}
	if rep.Unsettled > 0 {
		t.Errorf("%d keys still unanswered after the cuts: the service did not recover", rep.Unsettled)
	}
	if rep.Answers["unavailable"] == 0 {
		t.Logf("no send met a cut (the load may have ended before the first cut)")
	}
	// Recovered: a fresh keyed send runs once, and its retry names the same task.
	c := &wireclient.Client{BaseURL: srv.URL}
	s := newSend(mode{wireclient.JSONRPC, false}, true)
	before := srv.Runs()
	a1, a2 := do(t, c, s), do(t, c, s)
	if a1.Kind != wireclient.Task || a2.TaskID != a1.TaskID || srv.Runs() != before+1 {
		t.Errorf("after the cuts: %v, then %v, %d runs; want one task twice and one run", a1, a2, srv.Runs()-before)
	}
}
