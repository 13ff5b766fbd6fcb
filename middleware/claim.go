package middleware

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// ClaimedSend is the middleware's claim on a keyed first send. The middleware puts it
// in the context of the request it forwards, so that code behind it (the a2a-go
// adapter, or a server's own executor) can bind the key to the task before the agent's
// first step: a retry that arrives while a long blocking send is still running then
// gets the task at once instead of waiting for the first response.
//
// A ClaimedSend is safe for concurrent use. It calls the index at most once per
// distinct binding, however many times Bind is called with the same value.
type ClaimedSend struct {
	index     idempotency.KeyIndex
	scope     string
	key       string
	messageID string
	token     idempotency.Token

	// waiters, when set, is notified of the key after each successful Bind; the
	// middleware uses it to wake the retries of this process that wait for the key.
	waiters *notifier
	// timeout, when positive, bounds each index call: the adapter binds on a2a-go's
	// detached context, which has no deadline of its own.
	timeout time.Duration
	// requestID is the request_id of the middleware's log lines about the send.
	requestID string

	mu sync.Mutex
	// onBind, when set, is called (with mu held) after each successful bind.
	onBind  func()
	hooked  bool  // Bind was called by code behind the middleware
	held    bool  // Hold was called: never release the key
	hookErr error // the last error of such a call
	bound   bool
	binding idempotency.Binding
	boundBy BoundBy // what made the first successful bind
	// indexTime is the time the binds spent in the index.
	indexTime time.Duration
}

type claimedSendKey struct{}

// withClaimedSend returns a copy of ctx carrying c.
func withClaimedSend(ctx context.Context, c *ClaimedSend) context.Context {
	return context.WithValue(ctx, claimedSendKey{}, c)
}

// ClaimedSendFrom returns the claim the middleware made for the request whose context
// is ctx, and false when the request was not a keyed first send.
func ClaimedSendFrom(ctx context.Context) (*ClaimedSend, bool) {
	c, ok := ctx.Value(claimedSendKey{}).(*ClaimedSend)
	return c, ok && c != nil
}

// Scope returns the scope the key was claimed in.
func (c *ClaimedSend) Scope() string { return c.scope }

// Key returns the claimed key. Do not log it in full (see idempotency.RedactKey).
func (c *ClaimedSend) Key() string { return c.key }

// MessageID returns the id of the message that claimed the key.
func (c *ClaimedSend) MessageID() string { return c.messageID }

// Token returns the claim's fencing token. It never changes: the engine extends the
// claim's lease under it while the send runs.
func (c *ClaimedSend) Token() idempotency.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// RequestID returns the request_id the middleware's log lines about the send carry,
// for the log lines of code behind it (the adapter's carry it too), so that a grep
// for it follows the send from claim to bind.
func (c *ClaimedSend) RequestID() string { return c.requestID }

// Bind binds the key to b (a task id or a Message reply) through the index. Call it
// before the agent's first step; when it returns an error, the claim was lost (taken
// over after its lease ended, or the index is unavailable) and the agent must not run.
// Binding the value already bound (or its task id alone) returns nil without calling
// the index again. Inside the middleware, each call is bounded by
// Options.IndexTimeout.
func (c *ClaimedSend) Bind(ctx context.Context, b idempotency.Binding) error {
	return c.bind(ctx, b, true)
}

// BindWith binds the key to b as Bind does, through bind instead of the index's own
// Bind: bind must bind the key under token in the index the middleware uses, and
// return nil only once that binding took effect. Use it to bind in a transaction
// beside writes that must commit with the binding (package a2atasks stores a task
// and binds its key in one). The claim's lock is held while bind runs, so token stays
// the claim's own throughout; bind is not called when b is bound already.
func (c *ClaimedSend) BindWith(ctx context.Context, b idempotency.Binding, bind func(ctx context.Context, token idempotency.Token) error) error {
	return c.bindVia(ctx, b, true, bind)
}

// Hold tells the middleware that the send may have had effects although its key is
// not bound yet (the adapter calls it at the agent's first event): when the send then
// fails, its key is not released, so that no retry runs the send again while it may
// have run; it stays pending until it is bound or its lease ends.
func (c *ClaimedSend) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = true
}

// holding reports whether Hold was called.
func (c *ClaimedSend) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

func (c *ClaimedSend) bind(ctx context.Context, b idempotency.Binding, hook bool) error {
	return c.bindVia(ctx, b, hook, func(ctx context.Context, token idempotency.Token) error {
		return c.index.Bind(ctx, c.scope, c.key, token, b)
	})
}

func (c *ClaimedSend) bindVia(ctx context.Context, b idempotency.Binding, hook bool, bind func(context.Context, idempotency.Token) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if hook {
		c.hooked = true
	}
	if c.bound && c.binding.TaskID == b.TaskID && (len(b.Reply) == 0 || bytes.Equal(c.binding.Reply, b.Reply)) {
		return nil // the value already bound, or its task id alone
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	start := time.Now()
	err := bind(ctx, c.token)
	c.indexTime += time.Since(start)
	if err != nil {
		if hook {
			c.hookErr = err
		}
		return err
	}
	if hook {
		c.hookErr = nil
	}
	if !c.bound {
		c.boundBy = BoundByAnswer
		if hook {
			c.boundBy = BoundByAdapter
		}
	}
	c.bound, c.binding = true, b
	if c.onBind != nil {
		c.onBind()
	}
	if c.waiters != nil {
		c.waiters.notify(waitKey{c.scope, c.key})
	}
	return nil
}

// Bound returns what the key was bound to through this handle, and false when nothing
// was bound yet.
func (c *ClaimedSend) Bound() (idempotency.Binding, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.binding, c.bound
}

// state reports whether code behind the middleware called Bind (so it knows
// whether the agent could have started), and whether the key is bound.
func (c *ClaimedSend) state() (hooked, bound bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hooked, c.bound
}

// report returns what bound the key through this handle, and the time its binds
// spent in the index.
func (c *ClaimedSend) report() (BoundBy, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boundBy, c.indexTime
}

// hookFailed reports whether the last Bind by code behind the middleware failed, so
// that the agent did not run: the send was refused for want of the index.
func (c *ClaimedSend) hookFailed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hookErr != nil
}
