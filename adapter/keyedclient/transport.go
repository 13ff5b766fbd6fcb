package keyedclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
)

// FactoryOptions returns a2aclient factory options that make the clients they build
// send through a [Transport]: one for the JSON-RPC binding and one for HTTP+JSON, both
// sending with [Options.HTTPClient] wrapped in a [RoundTripper]. Pass them to
// a2aclient.NewFromCard (the card decides whether the peer honours keys) or
// a2aclient.NewFromEndpoints (with [Options.PeerHonoursKeys]):
//
//	client, err := a2aclient.NewFromCard(ctx, card, keyedclient.FactoryOptions(keyedclient.Options{})...)
//
// They replace a2a-go's default JSON-RPC and HTTP+JSON transports, so put them after
// any a2aclient.WithJSONRPCTransport or WithRESTTransport option (or, better, drop
// those and set [Options.HTTPClient]): a later option of that kind would replace them
// in turn, and sends would silently go unretried. For the gRPC binding, add
// WithKeyedTransport of the module github.com/a2akit/idempotency/grpcbinding, which
// keeps gRPC out of this module.
func FactoryOptions(opts Options) []a2aclient.FactoryOption {
	hc := &http.Client{Timeout: DefaultRequestTimeout}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	hc.Transport = NewRoundTripper(hc.Transport)

	jsonrpc := a2aclient.TransportFactoryFn(func(ctx context.Context, card *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
		return NewTransport(a2aclient.NewJSONRPCTransport(iface.URL, hc), card, opts), nil
	})
	rest := a2aclient.TransportFactoryFn(func(ctx context.Context, card *a2a.AgentCard, iface *a2a.AgentInterface) (a2aclient.Transport, error) {
		u, err := url.Parse(iface.URL)
		if err != nil {
			return nil, fmt.Errorf("keyedclient: parse endpoint URL: %w", err)
		}
		return NewTransport(a2aclient.NewRESTTransport(u, hc), card, opts), nil
	})
	return []a2aclient.FactoryOption{
		a2aclient.WithTransport(a2a.TransportProtocolJSONRPC, jsonrpc),
		a2aclient.WithTransport(a2a.TransportProtocolHTTPJSON, rest),
	}
}

// Transport is an a2aclient.Transport that keys the sends of the transport it wraps
// and retries them after ambiguous failures; see the package documentation for the
// rules. Every method other than SendMessage and SendStreamingMessage is the wrapped
// transport's. Create it with [NewTransport] (or let [FactoryOptions] do it). It is
// safe for concurrent use when the wrapped transport is.
//
// One call of SendMessage or SendStreamingMessage is one logical send: it gets one key
// (when it has none), and all its attempts carry that key and the same message. The
// transport sits below a2aclient's call interceptors, which therefore run once per
// logical send, and see only its final outcome.
type Transport struct {
	a2aclient.Transport
	honours bool
	policy  RetryPolicy
	logger  *slog.Logger
}

var _ a2aclient.Transport = (*Transport)(nil)

// NewTransport returns a [Transport] that wraps inner. card is the peer's agent card,
// or nil: the peer honours keys when card declares [idempotency.ExtensionURI] or
// opts.PeerHonoursKeys is set. inner must send over HTTP through a [RoundTripper] for
// the Transport to see HTTP statuses; without one, only failures of the connection
// are retried.
func NewTransport(inner a2aclient.Transport, card *a2a.AgentCard, opts Options) *Transport {
	return &Transport{
		Transport: inner,
		honours:   opts.PeerHonoursKeys || adapter.DeclaresExtension(card),
		policy:    opts.Retry.withDefaults(),
		logger:    opts.logger(),
	}
}

// PeerHonoursKeys reports whether t keys and retries sends: whether the peer's card
// declared the extension, or the caller asserted it.
func (t *Transport) PeerHonoursKeys() bool { return t.honours }

// SendMessage implements a2aclient.Transport. Against a peer that honours keys, it
// attaches a fresh key to a copy of the message unless the message has one, and
// retries the send after ambiguous failures. When it gives up, it returns the last
// failure, wrapped with the number of attempts.
func (t *Transport) SendMessage(ctx context.Context, params a2aclient.ServiceParams, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	req, key, retry := t.prepare(req)
	if !retry {
		return t.Transport.SendMessage(ctx, params, req)
	}
	for attempt := 1; ; attempt++ {
		result, err := t.Transport.SendMessage(withRetrying(ctx), params, req)
		if err == nil {
			return result, nil
		}
		if err := t.wait(ctx, key, attempt, err); err != nil {
			return nil, err
		}
	}
}

// SendStreamingMessage implements a2aclient.Transport. It keys the send like
// SendMessage, and retries it after an ambiguous failure, also one that ends the
// stream after some events were yielded: the events of the re-send follow, starting
// with the task's current state. A stream that ends without an error is not retried.
func (t *Transport) SendStreamingMessage(ctx context.Context, params a2aclient.ServiceParams, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	req, key, retry := t.prepare(req)
	if !retry {
		return t.Transport.SendStreamingMessage(ctx, params, req)
	}
	return func(yield func(a2a.Event, error) bool) {
		for attempt := 1; ; attempt++ {
			var failure error
			for event, err := range t.Transport.SendStreamingMessage(withRetrying(ctx), params, req) {
				if err != nil {
					failure = err
					break
				}
				if !yield(event, nil) {
					return
				}
			}
			if failure == nil {
				return
			}
			if err := t.wait(ctx, key, attempt, failure); err != nil {
				yield(nil, err)
				return
			}
		}
	}
}

// prepare returns the request to send, its key, and whether the send may be retried.
// It attaches a fresh key to a copy of the message when the peer honours keys and the
// message carries no key.
func (t *Transport) prepare(req *a2a.SendMessageRequest) (*a2a.SendMessageRequest, string, bool) {
	if !t.honours || req == nil || req.Message == nil {
		return req, "", false
	}
	key, ok, err := idempotency.KeyOf(req.Message.Metadata)
	switch {
	case err != nil:
		// A malformed key: the server refuses the send, and retrying cannot help.
		return req, "", false
	case ok:
		return req, key, true
	}
	key = idempotency.NewKey()
	msg := *req.Message
	metadata, extensions, err := idempotency.SetKey(maps.Clone(msg.Metadata), slices.Clone(msg.Extensions), key)
	if err != nil {
		return req, "", false // unreachable: NewKey returns valid keys
	}
	msg.Metadata, msg.Extensions = metadata, extensions
	keyed := *req
	keyed.Message = &msg
	return &keyed, key, true
}

// wait decides whether the send whose attempt failed with err is retried. It returns
// nil after waiting out the backoff, or the error to return to the caller.
func (t *Transport) wait(ctx context.Context, key string, attempt int, err error) error {
	retryAfter, ok := ambiguous(err)
	switch {
	case !ok:
		if attempt == 1 {
			return err
		}
		return fmt.Errorf("keyedclient: attempt %d of a keyed send refused: %w", attempt, err)
	case ctx.Err() != nil:
		return fmt.Errorf("keyedclient: keyed send abandoned after %d attempts: %w", attempt, errors.Join(ctx.Err(), err))
	case attempt >= t.policy.MaxAttempts:
		return fmt.Errorf("keyedclient: keyed send failed after %d attempts: %w", attempt, err)
	case retryAfter > t.policy.MaxRetryAfter:
		// A full scope (429) or a long outage: retrying sooner than asked cannot help.
		return fmt.Errorf("keyedclient: keyed send given up after %d attempts: the server asked to wait %s, "+
			"longer than RetryPolicy.MaxRetryAfter; resend the same message, with its key, later: %w", attempt, retryAfter, err)
	}
	delay := t.policy.delay(attempt, retryAfter)
	t.logger.InfoContext(ctx, "keyedclient: retrying a keyed send after an ambiguous failure",
		"key", idempotency.RedactKey(key), "attempt", attempt+1, "delay", delay, "error", err)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("keyedclient: keyed send abandoned after %d attempts: %w", attempt, errors.Join(ctx.Err(), err))
	}
}

// ambiguous reports whether err leaves open whether the send reached the agent, so that
// a keyed send is retried, and the Retry-After that came with it.
func ambiguous(err error) (retryAfter time.Duration, ok bool) {
	if re, isRetryable := errors.AsType[*RetryableError](err); isRetryable {
		return re.RetryAfter, true
	}
	if se, isStatus := errors.AsType[*StatusError](err); isStatus {
		return se.RetryAfter, true
	}
	if _, isA2A := errors.AsType[*a2a.Error](err); isA2A {
		return 0, false
	}
	// Certificate and TLS failures are deterministic: retrying cannot help.
	if _, isCert := errors.AsType[*tls.CertificateVerificationError](err); isCert {
		return 0, false
	}
	if _, isCert := errors.AsType[x509.UnknownAuthorityError](err); isCert {
		return 0, false
	}
	if _, isCert := errors.AsType[x509.HostnameError](err); isCert {
		return 0, false
	}
	if _, isCert := errors.AsType[x509.CertificateInvalidError](err); isCert {
		return 0, false
	}
	if errors.Is(err, context.Canceled) {
		// The request's context, which is the caller's: the caller gave up.
		return 0, false
	}
	// A failure of the HTTP exchange itself (http.Client wraps every one in
	// *url.Error), or one while reading the response body.
	if _, isURL := errors.AsType[*url.Error](err); isURL {
		return 0, true
	}
	if ne, isNet := errors.AsType[net.Error](err); isNet && ne.Timeout() {
		return 0, true
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		return 0, true
	}
	return 0, false
}
