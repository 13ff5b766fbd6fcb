package keyedclient

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"
)

// Defaults of [RetryPolicy]. They follow the Rust SDK's client (three retries, 500 ms
// doubling up to 30 s, jitter).
const (
	DefaultMaxAttempts  = 4
	DefaultInitialDelay = 500 * time.Millisecond
	DefaultMaxDelay     = 30 * time.Second
	// DefaultMaxRetryAfter is well above the middleware's Retry-After for a send in
	// flight (at most 10 s) and an unavailable index (1 s), and below its hour for a
	// full scope.
	DefaultMaxRetryAfter = 5 * time.Minute
)

// DefaultRequestTimeout is the timeout of the HTTP client [FactoryOptions] uses when
// [Options.HTTPClient] is nil; it is a2a-go's own default.
const DefaultRequestTimeout = 3 * time.Minute

// RetryPolicy bounds the retries of one keyed send. The zero value uses the defaults.
//
// The delay before retry n (n = 1 for the first retry) is InitialDelay·2^(n-1), capped
// at MaxDelay, multiplied by a random factor in [0.5, 1) so that clients that failed
// together do not retry together. When the failed response carried Retry-After (in
// seconds or as an HTTP date), the delay is that instead, capped at MaxDelay; a
// Retry-After longer than MaxRetryAfter (the middleware's answer to a full scope asks
// for an hour) ends the retries at once with that failure, since retrying much sooner
// than the server asked cannot help: the caller may resend the same message, with its
// key, when it chooses.
type RetryPolicy struct {
	// MaxAttempts bounds the number of attempts, the first included; default
	// [DefaultMaxAttempts]. 1 disables retries.
	MaxAttempts int
	// InitialDelay is the delay before the first retry; default [DefaultInitialDelay].
	InitialDelay time.Duration
	// MaxDelay caps every delay, Retry-After included; default [DefaultMaxDelay].
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After that is retried (after MaxDelay at
	// most); a longer one ends the retries. Default [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.InitialDelay <= 0 {
		p.InitialDelay = DefaultInitialDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// delay returns how long to wait before retry n (n ≥ 1), given the Retry-After of the
// failure (zero when it had none).
func (p RetryPolicy) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, p.MaxDelay)
	}
	d := p.InitialDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return d/2 + rand.N(d/2+1)
}

// Options configure [FactoryOptions] and [NewTransport]. The zero value works.
type Options struct {
	// PeerHonoursKeys asserts that the peer honours idempotency keys even though no
	// agent card says so: a client created with a2aclient.NewFromEndpoints has no
	// card, and a card signed before it declared the extension does not list it.
	// Assert it only for a server you know runs the kit (or another implementation
	// of the extension): a server that ignores keys runs every retry as a new task.
	PeerHonoursKeys bool

	// Retry bounds the retries of a keyed send.
	Retry RetryPolicy

	// HTTPClient is the HTTP client the transports of [FactoryOptions] send with. It
	// is copied, not modified: the copy's Transport is wrapped in a [RoundTripper].
	// Default: a client with [DefaultRequestTimeout] over http.DefaultTransport.
	// Configure the HTTP client here, not with a2aclient.WithJSONRPCTransport or
	// WithRESTTransport: those replace the transports of FactoryOptions.
	HTTPClient *http.Client

	// Logger receives a line per retry; default slog.Default(). Keys are logged
	// redacted.
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}
