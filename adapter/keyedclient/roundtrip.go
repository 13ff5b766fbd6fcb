package keyedclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// StatusError is an HTTP response to a keyed send that is worth retrying: 409 with
// Retry-After, 429, 502, 503 or 504. [RoundTripper] returns it in place of the
// response, because a2a-go's JSON-RPC client reduces any status other than 200 to a
// plain error ("unexpected HTTP status") and drops Retry-After, and its HTTP+JSON
// client reads the status from the body. Find it with errors.As.
type StatusError struct {
	// StatusCode and Status are those of the response.
	StatusCode int
	Status     string
	// RetryAfter is the response's Retry-After, or zero when it had none (or one that
	// could not be read, or one in the past).
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("keyedclient: HTTP status %s (retry after %s)", e.Status, e.RetryAfter)
	}
	return "keyedclient: HTTP status " + e.Status
}

// RoundTripper turns the HTTP responses that [Transport] retries into a [StatusError],
// so that the Transport sees their status and Retry-After whatever the binding.
// [FactoryOptions] installs it; a caller that builds its own a2aclient transport for
// [NewTransport] wraps the HTTP client's transport in it. It acts only on the requests
// of keyed sends that the Transport may retry, and passes every other request and
// response through unchanged. It is safe for concurrent use when its base is.
type RoundTripper struct {
	base http.RoundTripper
}

var _ http.RoundTripper = (*RoundTripper)(nil)

// NewRoundTripper returns a [RoundTripper] over base; nil means http.DefaultTransport.
func NewRoundTripper(base http.RoundTripper) *RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &RoundTripper{base: base}
}

// RoundTrip implements http.RoundTripper. It tells a [Replay] watching the
// request's context whether the answer was marked as replayed. For a request of a retried keyed send whose
// response has status 409 with a Retry-After header, 429, 502, 503 or 504, it reads
// and closes the response body (up to 64 KiB) and returns a [StatusError]; otherwise
// it returns what its base returned.
func (rt *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err == nil {
		NoteReplayed(req.Context(), resp.Header.Get(idempotency.ReplayedHeader) == "true")
	}
	if err != nil || !Retrying(req.Context()) {
		return resp, err
	}
	retryAfter, hasRetryAfter := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	switch resp.StatusCode {
	case http.StatusConflict:
		if !hasRetryAfter {
			return resp, nil
		}
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return nil, &StatusError{StatusCode: resp.StatusCode, Status: resp.Status, RetryAfter: retryAfter}
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date. It reports
// whether the header was present and readable; the duration is zero for a date in the
// past.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// RetryableError is a failure of a keyed send that the transport of another binding
// found ambiguous: the send may or may not have reached the agent (the gRPC binding's
// UNAVAILABLE, for example). [Transport] retries it, after RetryAfter when that is
// set. A transport returns it only for the attempts that [Retrying] reports, so that
// the errors of every other call keep their usual types; its Err must not carry the
// other binding's own error type if that would make the a2a-go transport convert it
// into an *a2a.Error, which Transport never retries.
type RetryableError struct {
	// Err describes the failure.
	Err error
	// RetryAfter is the delay the server asked for, or zero.
	RetryAfter time.Duration
}

func (e *RetryableError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("keyedclient: %v (retry after %s)", e.Err, e.RetryAfter)
	}
	return "keyedclient: " + e.Err.Error()
}

func (e *RetryableError) Unwrap() error { return e.Err }

type retryingKey struct{}

// withRetrying marks ctx as the context of an attempt of a send that Transport may
// retry, for RoundTripper.
func withRetrying(ctx context.Context) context.Context {
	return context.WithValue(ctx, retryingKey{}, true)
}

// Retrying reports whether ctx is the context of an attempt of a keyed send that a
// [Transport] may retry. [RoundTripper] acts only on those requests; the transport of
// another binding uses it in the same way before it returns a [RetryableError].
func Retrying(ctx context.Context) bool {
	v, _ := ctx.Value(retryingKey{}).(bool)
	return v
}
