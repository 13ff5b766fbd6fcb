package keyedclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func TestRetryPolicyDelay(t *testing.T) {
	p := RetryPolicy{InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second}.withDefaults()
	if p.MaxAttempts != DefaultMaxAttempts {
		t.Errorf("default MaxAttempts %d, want %d", p.MaxAttempts, DefaultMaxAttempts)
	}
	for n, full := range map[int]time.Duration{
		1:  100 * time.Millisecond,
		2:  200 * time.Millisecond,
		3:  400 * time.Millisecond,
		4:  800 * time.Millisecond,
		5:  time.Second, // capped
		60: time.Second,
	} {
		for range 100 {
			if d := p.delay(n, 0); d < full/2 || d > full {
				t.Fatalf("delay before retry %d = %v, want within [%v, %v]", n, d, full/2, full)
			}
		}
	}
	if d := p.delay(1, 700*time.Millisecond); d != 700*time.Millisecond {
		t.Errorf("delay with Retry-After 700ms = %v, want exactly that", d)
	}
	if d := p.delay(1, time.Hour); d != time.Second {
		t.Errorf("delay with Retry-After 1h = %v, want MaxDelay", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"99999999", 24 * time.Hour, true},
	}
	for _, tc := range cases {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A RetryableError from another binding's transport is retried with its delay, also
// when wrapped; the same failure without it is not (an a2a-go transport reports it as
// an *a2a.Error).
func TestRetryableErrorIsAmbiguous(t *testing.T) {
	err := fmt.Errorf("send: %w", &RetryableError{Err: errors.New("gRPC status Unavailable: down"), RetryAfter: 2 * time.Second})
	if d, ok := ambiguous(err); !ok || d != 2*time.Second {
		t.Fatalf("ambiguous(%v) = %v, %v; want 2s, true", err, d, ok)
	}
	if _, ok := ambiguous(a2a.NewError(a2a.ErrInternalError, "down")); ok {
		t.Fatal("an *a2a.Error is ambiguous")
	}
	if Retrying(context.Background()) || !Retrying(withRetrying(context.Background())) {
		t.Fatal("Retrying does not report the contexts of retried attempts")
	}
}
