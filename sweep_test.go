package idempotency_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// countingSweeper counts its sweeps and fails the ones fail says.
type countingSweeper struct {
	mu       sync.Mutex
	calls    int
	policies []idempotency.RetentionPolicy
	fail     func(n int) error
}

func (s *countingSweeper) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.policies = append(s.policies, p)
	s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(n); err != nil {
			return idempotency.PurgeReport{KeysDeleted: 1}, err
		}
	}
	return idempotency.PurgeReport{KeysDeleted: int64(n), Batches: 1, Complete: true}, nil
}

func TestSweepRunner(t *testing.T) {
	sw := &countingSweeper{fail: func(n int) error {
		if n == 2 {
			return errors.New("connection refused")
		}
		return nil
	}}
	var logs testkit.Buffer
	type result struct {
		rep idempotency.PurgeReport
		err error
	}
	results := make(chan result, 10)
	policy := idempotency.RetentionPolicy{KeyMaxAge: time.Hour, BatchSize: 7}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		idempotency.SweepRunner{Sweeper: sw, Policy: policy, Interval: 5 * time.Millisecond,
			Logger:  slog.New(slog.NewTextHandler(&logs, nil)),
			OnSweep: func(rep idempotency.PurgeReport, err error) { results <- result{rep, err} },
		}.Run(ctx)
	}()
	var got []result
	for len(got) < 3 {
		select {
		case r := <-results:
			got = append(got, r)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d sweeps in 10s, want 3", len(got))
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	if got[0].err != nil || got[0].rep.KeysDeleted != 1 || got[1].err == nil || got[2].err != nil {
		t.Errorf("OnSweep saw %+v; want a success, the failure, a success", got)
	}
	sw.mu.Lock()
	for _, p := range sw.policies {
		if p != policy {
			t.Errorf("swept with %+v, want %+v", p, policy)
		}
	}
	sw.mu.Unlock()
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg="idempotency: retention sweep" keys_deleted=1 tasks_deleted=0 batches=1 complete=true`,
		`level=WARN msg="idempotency: retention sweep failed; the next one runs in an interval" keys_deleted=1`,
		`error="connection refused"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

// The first sweep waits one interval; a negative interval turns the sweep off; a
// sweep cut by the end of ctx is not reported as a failure.
func TestSweepRunnerTiming(t *testing.T) {
	sw := &countingSweeper{}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	idempotency.SweepRunner{Sweeper: sw, Interval: time.Hour, Logger: slog.New(slog.DiscardHandler)}.Run(ctx)
	idempotency.SweepRunner{Sweeper: sw, Interval: -1}.Run(t.Context()) // returns at once
	if sw.calls != 0 {
		t.Errorf("%d sweeps before the first interval ended, want 0", sw.calls)
	}

	ctx, cancel = context.WithCancel(t.Context())
	blocking := &countingSweeper{fail: func(int) error { cancel(); return ctx.Err() }}
	reported := false
	idempotency.SweepRunner{Sweeper: blocking, Interval: time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		OnSweep: func(idempotency.PurgeReport, error) { reported = true }}.Run(ctx)
	if reported {
		t.Error("a sweep cut by the end of ctx was reported to OnSweep")
	}
}
