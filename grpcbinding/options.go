package grpcbinding

import (
	"context"
	"log/slog"
	"time"

	"github.com/a2akit/idempotency/middleware"
)

// Options configure [New]. The zero value works: every field has the default of the
// field of the same name in [middleware.Options].
type Options struct {
	// Scope returns the scope a keyed send's key lives in, from the call's context
	// (its metadata and peer, where the authenticated principal is found) and the A2A
	// tenant the request names. The default is [middleware.TenantScope] of the tenant,
	// the scope the HTTP middleware's default routes ([middleware.TenantRoutes]) give
	// a send of that tenant, so that a key sent over JSON-RPC or HTTP+JSON and retried
	// over gRPC is the same send. An error refuses the send as INVALID_ARGUMENT with the error's text.
	Scope func(ctx context.Context, tenant string) (string, error)

	// Principal and CheckContent are those of [middleware.Options], for gRPC:
	// Principal returns the caller who made the call whose context is ctx (after the
	// interceptors before these ones, authentication's included); [Principal] runs
	// an a2a-go server's own authentication on the call's metadata, and
	// [PrincipalMetadata] reads a metadata key an authenticating proxy sets. A
	// Principal error, or an empty principal, refuses a keyed send as
	// INVALID_ARGUMENT. Bind keys to callers, and check content, on every binding of
	// the index alike: a send claimed by a caller over HTTP and retried by the same
	// caller over gRPC meets its claim only when both name the caller with the same
	// string.
	Principal    func(ctx context.Context) (string, error)
	CheckContent bool

	// Lease, SoleInstance, ReplayWait, IndexTimeout, Logger and Observe are those of
	// [middleware.Options]; set them as for the HTTP middleware on the same index.
	// Events report the binding [middleware.BindingGRPC]. The engine extends a
	// running send's lease as it does on HTTP, so a send may run for longer than its
	// lease: a retry waits (UNAVAILABLE) until it binds.
	Lease        time.Duration
	SoleInstance bool
	ReplayWait   time.Duration
	IndexTimeout time.Duration
	Logger       *slog.Logger
	Observe      func(middleware.Event)

	// Tasks, when set, reads tasks for replays instead of a GetTask call on the
	// registered service; see [middleware.Options.Tasks]. Its ReadTask gets a request
	// that stands for the gRPC call: method POST, the call's full method as URL path,
	// and the call's incoming metadata as header (so adapter.TaskReader's User sees
	// an authorization header as it would over HTTP).
	Tasks middleware.TaskSource
}
