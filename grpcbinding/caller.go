package grpcbinding

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/metadata"

	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/middleware"
)

// Principal returns an [Options.Principal] that names the caller of a gRPC call as
// an a2a-go server does: it runs interceptors (the server's authentication, the
// a2asrv.CallInterceptors it passes to a2asrv.WithCallInterceptors) on an
// a2asrv.CallContext made from the call's incoming metadata, as a2agrpc makes it, and
// returns adapter.CallerOf that call context; see adapter.Principal, its HTTP twin,
// for what the interceptors see and when a keyed send is refused.
func Principal(interceptors ...a2asrv.CallInterceptor) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		return adapter.Authenticate(ctx, a2asrv.NewServiceParams(md), interceptors...)
	}
}

// PrincipalMetadata returns an [Options.Principal] that takes the caller from the
// call's incoming metadata key, as an authenticating proxy in front of the server
// sets it; the gRPC twin of middleware.PrincipalHeader, with the same caveats.
func PrincipalMetadata(key string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		switch v := md.Get(key); {
		case len(v) > 1:
			return "", fmt.Errorf("the call names its caller in %s more than once; send it through the "+
				"authenticating proxy in front of this server", key)
		case len(v) == 0 || v[0] == "":
			return "", fmt.Errorf("the call lacks the %s metadata that the authenticating proxy in front of this "+
				"server sets; send it through that proxy", key)
		default:
			return v[0], nil
		}
	}
}

// identify returns the scope of the call's keyed send, and sets its Principal and
// Fingerprint as Options.Principal and Options.CheckContent ask.
func (x *call) identify() (string, error) {
	scope, err := x.i.scope(x.ctx, x.in.GetTenant())
	if err != nil {
		return "", err
	}
	if x.i.principal != nil {
		p, err := x.i.principal(x.ctx)
		switch {
		case err != nil:
			return "", err
		case p == "":
			return "", middleware.ErrNoPrincipal
		}
		x.send.Principal = p
	}
	if x.i.checkContent {
		raw, err := marshalJSON(x.in.GetMessage())
		if err != nil {
			return "", err
		}
		if x.send.Fingerprint, err = middleware.MessageFingerprint(raw); err != nil {
			return "", err
		}
	}
	return scope, nil
}
