package anyserver

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

const (
	working   = "TASK_STATE_WORKING"
	completed = "TASK_STATE_COMPLETED"
)

// each runs check for every front and binding, in parallel.
func each(t *testing.T, check func(t *testing.T, f front, b binding)) {
	for _, f := range fronts {
		for _, b := range bindings {
			t.Run(f.name+"/"+string(b), func(t *testing.T) {
				t.Parallel()
				check(t, f, b)
			})
		}
	}
}

func isTask(a answer) bool { return a.status == 200 && a.kind == "task" && a.taskID != "" }

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
			each(t, func(t *testing.T, f front, b binding) {
				up := startUpstream(t, card.args...)
				base := f.start(t, up, kit{lease: time.Second, replayWait: 2 * time.Second})
				m := newMsg(t, b, false, "wait 2s cut")
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err := send(ctx, base, m)
				cancel()
				if err == nil {
					t.Fatal("the first attempt answered within 300ms; want it cut")
				}
				time.Sleep(time.Until(start.Add(1500 * time.Millisecond))) // past the lease
				first := retryUntil(t, base, m, 5*time.Second, isTask)
				done := retryUntil(t, base, m, 5*time.Second, func(a answer) bool { return isTask(a) && a.state == completed })
				if first.taskID != done.taskID {
					t.Errorf("retries named two tasks: %s, then %s", first.taskID, done.taskID)
				}
				checkRuns(t, up, 1)
			})
		})
	}
}

// A retry during a 3 s run gets the task, working, within ReplayWait, not a 409 for
// the whole run; the first attempt then completes that task, and the agent ran once.
func TestRetryDuringLongRun(t *testing.T) {
	each(t, func(t *testing.T, f front, b binding) {
		const replayWait = 2 * time.Second
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: replayWait})
		m := newMsg(t, b, false, "wait 3s long")
		firstc := make(chan answer, 1)
		go func() {
			a, err := send(context.Background(), base, m)
			if err != nil {
				a.raw = err.Error()
			}
			firstc <- a
		}()
		time.Sleep(300 * time.Millisecond)
		sent := time.Now()
		a, err := send(context.Background(), base, m)
		took := time.Since(sent)
		if err != nil {
			t.Fatal(err)
		}
		if !isTask(a) || a.state != working || took > replayWait {
			t.Errorf("retry during the run: %v after %v; want the task, working, within %v", a, took, replayWait)
		}
		first := <-firstc
		if !isTask(first) || first.state != completed || first.taskID != a.taskID {
			t.Errorf("first attempt: %v; want task %s completed", first, a.taskID)
		}
		checkRuns(t, up, 1)
	})
}

// 64 concurrent identical keyed sends: one run, and every answer names its task.
func TestConcurrentIdenticalSends(t *testing.T) {
	each(t, func(t *testing.T, f front, b binding) {
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: 5 * time.Second})
		m := newMsg(t, b, false, "wait 1s crowd")
		var wg sync.WaitGroup
		answers := make([]answer, 64)
		errs := make([]error, 64)
		for i := range answers {
			wg.Go(func() { answers[i], errs[i] = send(context.Background(), base, m) })
		}
		wg.Wait()
		for i, a := range answers {
			if errs[i] != nil || !isTask(a) || a.taskID != answers[0].taskID {
				t.Errorf("send %d: %v, %v; want task %s", i, a, errs[i], answers[0].taskID)
			}
		}
		checkRuns(t, up, 1)
	})
}

// A streaming send cut after its first event, then a streaming retry: the retry
// starts with the task and then gets its events live, up to completion; one run.
func TestStreamingRetryAttachesLive(t *testing.T) {
	each(t, func(t *testing.T, f front, b binding) {
		up := startUpstream(t)
		base := f.start(t, up, kit{lease: time.Minute, replayWait: 2 * time.Second})
		m := newMsg(t, b, true, "wait 2s stream")
		ctx, cancel := context.WithCancel(context.Background())
		s, err := openStream(ctx, base, m)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.next()
		cancel()
		s.close()
		if err != nil || ev.taskID == "" {
			t.Fatalf("first event: %v, %v", ev, err)
		}
		time.Sleep(300 * time.Millisecond)
		retried := time.Now()
		s, err = openStream(context.Background(), base, m)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		head, err := s.next()
		if err != nil || !isTask(head) || head.taskID != ev.taskID || head.state == completed {
			t.Fatalf("retry's first event: %v, %v; want task %s before it completed", head, err, ev.taskID)
		}
		var last answer
		for {
			a, err := s.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.taskID != ev.taskID {
				t.Errorf("event of another task: %v", a)
			}
			last = a
		}
		if last.state != completed {
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
	for _, b := range bindings {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			up := startUpstream(t)
			store := filepath.Join(t.TempDir(), "keys.db")
			args := []string{"-upstream", up.url, "-listen", "127.0.0.1:0", "-admin", "", "-store", store,
				"-log-level", "WARN", "-lease", "2s", "-replay-wait", "2s"}
			p := startProcess(t, proxyBin, args...)
			msgs := make([]msg, 4)
			var wg sync.WaitGroup
			for i := range msgs {
				msgs[i] = newMsg(t, b, i%2 == 1, "wait 3s killed")
				wg.Go(func() {
					if msgs[i].streaming {
						if s, err := openStream(context.Background(), p.url, msgs[i]); err == nil {
							for _, err := s.next(); err == nil; _, err = s.next() {
							}
							s.close()
						}
						return
					}
					send(context.Background(), p.url, msgs[i])
				})
			}
			time.Sleep(700 * time.Millisecond)
			p.kill()
			wg.Wait()
			p = startProcess(t, proxyBin, args...)
			time.Sleep(2 * time.Second) // past every lease
			for _, m := range msgs {
				m.streaming = false
				retryUntil(t, p.url, m, 10*time.Second, func(a answer) bool { return isTask(a) && a.state == completed })
			}
			if runs := up.runs(t); runs > int64(len(msgs)) {
				t.Errorf("%d keys ran %d times; want at most once each", len(msgs), runs)
			}
		})
	}
}
