package testkit

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// UserAuth is an a2a-go authentication interceptor for tests: it sets the call's
// user from the header (HTTP) or metadata key (gRPC) it names, as a server's own
// authentication would from a bearer token. A call without it, or that names its
// user more than once, stays unauthenticated.
type UserAuth string

// Before implements a2asrv.CallInterceptor.
func (a UserAuth) Before(ctx context.Context, cc *a2asrv.CallContext, _ *a2asrv.Request) (context.Context, any, error) {
	if v, ok := cc.ServiceParams().Get(string(a)); ok && len(v) == 1 && v[0] != "" {
		cc.User = a2asrv.NewAuthenticatedUser(v[0], nil)
	}
	return ctx, nil, nil
}

// After implements a2asrv.CallInterceptor.
func (UserAuth) After(context.Context, *a2asrv.CallContext, *a2asrv.Response) error { return nil }
