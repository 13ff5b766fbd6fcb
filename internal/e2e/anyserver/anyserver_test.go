package anyserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	st "github.com/a2akit/idempotency/internal/testkit/sendtest"
)

// each runs check for every front and binding, in parallel.
func each(t *testing.T, check func(t *testing.T, f front, b st.Binding)) {
	for _, f := range fronts {
		for _, b := range st.Bindings {
			t.Run(f.name+"/"+string(b), func(t *testing.T) {
				t.Parallel()
				check(t, f, b)
			})
		}
	}
}

func checkRuns(t *testing.T, up upstream, want int64) {
	t.Helper()
	if got := up.runs(t); got != want {
		t.Errorf("the agent ran %d times, want %d", got, want)
	}
}

// A client cuts the connection while its keyed send runs, then retries: every retry
// names one task, which completes, and the agent ran once. The lease (1 s) ends long
// before the run (2 s) does: the first attempt's forward is still alive, and a retry
// must not take the key over. On a server whose card says it cannot stream, the key
// binds only when the blocking answer comes, so that is the case the lease matters
// for.
func TestClientCutsMidSend(t *testing.T) {
	for _, card := range []struct {
		name string
		args []string
	}{{"streaming", nil}, {"unary-only", []string{"-no-streaming"}}} {
		t.Run(card.name, func(t *testing.T) {
			each(t, func(t *testing.T, f front, b st.Binding) {
				up := startUpstream(t, card.args...)
				base := f.start(t, up, kit{lease: time.Second, replayWait: 2 * time.Second})
				m := st.NewMsg(b, false, "wait 2s cut")
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := st.Send(ctx, base, m)
				cancel()
				if err == nil {
					t.Fatal("the first attempt st.Answered within 300ms; want it cut")
				}
				time.Sleep(time.Until(start.Add(1500 * time.Millisecond))) // past the lease
				first := st.RetryUntil(t, base, m, 5*time.Second, st.Answer.IsTask)
				done := st.RetryUntil(t, base, m, 5*time.Second, func(a st.Answer) bool { return a.IsTask() && a.State == st.Completed })
				if first.TaskID != done.TaskID {
					t.Errorf("retries named two tasks: %s, then %s", first.TaskID, done.TaskID)
				}
				checkRuns(t, up, 1)
			})
		})
	}
}

// A retry during a 3 s run gets the task, working, within ReplayWait, not a 409 for
// the whole run; the first attempt then completes that task, and the agent ran once.
func TestRetryDuringLongRun(t *testing.T) {
	each(t, func(t *testing.T, f front, b st.Binding) {
		const replayWait = 2 * time.Second
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: replayWait})
		m := st.NewMsg(b, false, "wait 3s long")
		firstc := make(chan st.Answer, 1)
		go func() {
			a, err := st.Send(context.Background(), base, m)
			if err != nil {
				a.Raw = err.Error()
			}
			firstc <- a
		}()
		time.Sleep(300 * time.Millisecond)
		sent := time.Now()
		a, err := st.Send(context.Background(), base, m)
		took := time.Since(sent)
		if err != nil {
			t.Fatal(err)
		}
		if !a.IsTask() || a.State != st.Working || took > replayWait {
			t.Errorf("retry during the run: %v after %v; want the task, working, within %v", a, took, replayWait)
		}
		first := <-firstc
		if !first.IsTask() || first.State != st.Completed || first.TaskID != a.TaskID {
			t.Errorf("first attempt: %v; want task %s completed", first, a.TaskID)
		}
		checkRuns(t, up, 1)
	})
}

// 64 concurrent identical keyed sends: one run, and every answer names its task.
func TestConcurrentIdenticalSends(t *testing.T) {
	each(t, func(t *testing.T, f front, b st.Binding) {
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: 5 * time.Second})
		m := st.NewMsg(b, false, "wait 1s crowd")
		var wg sync.WaitGroup
		answers := make([]st.Answer, 64)
		errs := make([]error, 64)
		for i := range answers {
			wg.Go(func() { answers[i], errs[i] = st.Send(context.Background(), base, m) })
		}
		wg.Wait()
		for i, a := range answers {
			if errs[i] != nil || !a.IsTask() || a.TaskID != answers[0].TaskID {
				t.Errorf("send %d: %v, %v; want task %s", i, a, errs[i], answers[0].TaskID)
			}
		}
		checkRuns(t, up, 1)
	})
}

// A streaming send cut after its first event, then a streaming retry: the retry
// starts with the task and then gets its events live, up to completion; one run.
func TestStreamingRetryAttachesLive(t *testing.T) {
	each(t, func(t *testing.T, f front, b st.Binding) {
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: 2 * time.Second})
		m := st.NewMsg(b, true, "wait 2s stream")
		ctx, cancel := context.WithCancel(context.Background())
		s, err := st.OpenStream(ctx, base, m)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.Next()
		cancel()
		s.Close()
		if err != nil || ev.TaskID == "" {
			t.Fatalf("first event: %v, %v", ev, err)
		}
		time.Sleep(300 * time.Millisecond)
		retried := time.Now()
		s, err = st.OpenStream(context.Background(), base, m)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		head, err := s.Next()
		if err != nil || !head.IsTask() || head.TaskID != ev.TaskID || head.State == st.Completed {
			t.Fatalf("retry's first event: %v, %v; want task %s before it completed", head, err, ev.TaskID)
		}
		var last st.Answer
		for {
			a, err := s.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.TaskID != ev.TaskID {
				t.Errorf("event of another task: %v", a)
			}
			last = a
		}
		if last.State != st.Completed {
			t.Errorf("the retry's stream ended with %v; want the completion", last)
		}
		if took := time.Since(retried); took < time.Second {
			t.Errorf("the retry's stream ended %v after it started; the run had more than a second left, so events were not live", took)
		}
		checkRuns(t, up, 1)
	})
}

// The proxy is SIGKILLed while keyed sends run, and restarted on the same key store:
// retries get the tasks, and each key ran at most once.
func TestProxyKilledMidSend(t *testing.T) {
	for _, ps := range proxyStores {
		for _, b := range st.Bindings {
			t.Run(ps.name+"/"+string(b), func(t *testing.T) {
				t.Parallel()
				up := startUpstream(t)
				store := ps.open(t)
				args := []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "", "-store", store,
					"-log-level", "WARN", "-lease", "2s", "-replay-wait", "2s"}
				p := startProcess(t, proxyBin, args...)
				msgs := make([]st.Msg, 4)
				var wg sync.WaitGroup
				for i := range msgs {
					msgs[i] = st.NewMsg(b, i%2 == 1, "wait 3s killed")
					wg.Go(func() {
						if msgs[i].Streaming {
							if s, err := st.OpenStream(context.Background(), p.URL, msgs[i]); err == nil {
								for _, err := s.Next(); err == nil; _, err = s.Next() {
								}
								s.Close()
							}
							return
						}
						st.Send(context.Background(), p.URL, msgs[i])
					})
				}
				time.Sleep(700 * time.Millisecond)
				p.Kill()
				wg.Wait()
				p = startProcess(t, proxyBin, args...)
				time.Sleep(2 * time.Second) // past every lease
				for _, m := range msgs {
					m.Streaming = false
					st.RetryUntil(t, p.URL, m, 10*time.Second, func(a st.Answer) bool { return a.IsTask() && a.State == st.Completed })
				}
				if runs := up.runs(t); runs > int64(len(msgs)) {
					t.Errorf("%d keys ran %d times; want at most once each", len(msgs), runs)
				}
			})
		}
	}
}

// The proxy serves the upstream's card with its interfaces pointed at the proxy and
// the extension listed, every other byte as the upstream wrote it.
func TestProxyCard(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, proxyBin, "-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-public-url", "https://agents.example.com/echo")
	direct, proxied := get(t, up.URL+agentCard), get(t, p.URL+agentCard)
	var card struct {
		SupportedInterfaces []struct{ URL string } `json:"supportedInterfaces"`
		Capabilities        struct {
			Extensions []struct{ URI string } `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(proxied, &card); err != nil {
		t.Fatalf("proxied card: %v: %s", err, proxied)
	}
	var urls []string
	for _, i := range card.SupportedInterfaces {
		urls = append(urls, i.URL)
	}
	if want := []string{"https://agents.example.com/echo/jsonrpc", "https://agents.example.com/echo/rest"}; !slices.Equal(urls, want) {
		t.Errorf("interface URLs %q, want %q", urls, want)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Capabilities.Extensions[0].URI != idempotency.ExtensionURI {
		t.Errorf("extensions %+v, want the idempotency extension", card.Capabilities.Extensions)
	}
	// Undo both edits: what is left are the upstream's bytes.
	back := strings.ReplaceAll(string(proxied), "https://agents.example.com/echo", up.URL)
	back = strings.Replace(back, `,"extensions":[`+string(mustEntry(t, proxied))+`]`, "", 1)
	if back != string(direct) {
		t.Errorf("the proxied card is not the upstream's bytes plus the edits:\n%s\n%s", direct, proxied)
	}
}

const agentCard = "/.well-known/agent-card.json"

func get(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return b
}

// mustEntry returns the bytes of the card's one extension entry.
func mustEntry(t *testing.T, card []byte) []byte {
	var c struct {
		Capabilities struct {
			Extensions []json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(card, &c) != nil || len(c.Capabilities.Extensions) != 1 {
		t.Fatalf("no single extension entry in %s", card)
	}
	return c.Capabilities.Extensions[0]
}

// Two proxies share one key store in front of a server that does not stream, so a
// key is bound only when the blocking answer comes. The first attempt's client
// leaves; its forward goes on in proxy A, which renews the 1 s lease while the 3 s
// run lasts, so retries through proxy B, after the lease would have ended, wait and
// get 409 rather than taking the key over; once the run ends they get the task. One
// run.
func TestLeaseRenewedAcrossProxies(t *testing.T) {
	for _, ps := range proxyStores {
		t.Run(ps.name, func(t *testing.T) {
			up := startUpstream(t, "-no-streaming")
			store := ps.open(t)
			args := []string{"-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "", "-store", store,
				"-log-level", "WARN", "-lease", "1s", "-replay-wait", "200ms"}
			a, b := startProcess(t, proxyBin, args...), startProcess(t, proxyBin, args...)
			m := st.NewMsg(st.JSONRPC, false, "wait 3s renewed")
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if _, err := st.Send(ctx, a.URL, m); err == nil {
				t.Fatal("the first attempt answered within 300ms; want it cut")
			}
			cancel()
			for _, at := range []time.Duration{1500 * time.Millisecond, 2500 * time.Millisecond} {
				time.Sleep(time.Until(start.Add(at)))
				r, err := st.Send(context.Background(), b.URL, m)
				if err != nil || r.Status != http.StatusConflict {
					t.Errorf("retry through the other proxy %v after the first attempt: %v, %v; want 409", at, r, err)
				}
			}
			st.RetryUntil(t, b.URL, m, 5*time.Second, func(a st.Answer) bool { return a.IsTask() && a.State == st.Completed })
			checkRuns(t, up, 1)
		})
	}
}

// SIGTERM stops the proxy gracefully: a send in flight is answered, then the
// process exits with status 0.
func TestProxyGracefulShutdown(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, proxyBin, "-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "WARN")
	m := st.NewMsg(st.HTTPJSON, false, "wait 1s graceful")
	done := make(chan st.Answer, 1)
	go func() {
		a, err := st.Send(context.Background(), p.URL, m)
		if err != nil {
			a.Raw = err.Error()
		}
		done <- a
	}()
	time.Sleep(300 * time.Millisecond)
	if err := p.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if a := <-done; !a.IsTask() || a.State != st.Completed {
		t.Errorf("the send in flight at SIGTERM: %v; want its task, completed", a)
	}
	if err := p.Wait(); err != nil {
		t.Errorf("the proxy after SIGTERM: %v; want exit status 0", err)
	}
	checkRuns(t, up, 1)
}

// The admin listener: /readyz answers while the key store and the upstream do, /metrics counts
// the middleware's outcomes and the time it spent (the kit's collector,
// middleware/metrics) in Prometheus text format.
func TestProxyAdmin(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, proxyBin, "-upstream", up.URL, "-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-store", filepath.Join(t.TempDir(), "keys.db"), "-log-level", "WARN")
	_, rest, _ := strings.Cut(p.Line, "admin ")
	admin, _, _ := strings.Cut(rest, ",")
	if got := string(get(t, admin+"/readyz")); got != "key store: ok\nupstream: ok\n" {
		t.Errorf("/readyz: %q", got)
	}
	m := st.NewMsg(st.JSONRPC, false, "counted")
	st.RetryUntil(t, p.URL, m, 5*time.Second, st.Answer.IsTask)
	st.RetryUntil(t, p.URL, m, 5*time.Second, st.Answer.IsTask)
	metrics := string(get(t, admin+"/metrics"))
	for _, line := range []string{
		`a2a_idempotency_sends_total{binding="JSONRPC",outcome="claimed",protocol_version="1.0",streaming="false"} 1`,
		`a2a_idempotency_sends_total{binding="JSONRPC",outcome="replayed",protocol_version="1.0",streaming="false"} 1`,
		`a2a_idempotency_index_duration_seconds_count{outcome="claimed"} 1`,
		`a2a_idempotency_replay_duration_seconds_count{outcome="replayed"} 1`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", line, metrics)
		}
	}
	if resp, err := http.Get(p.URL + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Error("the public port serves the metrics")
		}
	}
}
