package adapter

import (
	"context"
	"errors"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// errUnauthenticated refuses a keyed send that the server's authentication refused.
var errUnauthenticated = errors.New("the server's authentication refused the keyed send; send it authenticated")

// Principal returns a middleware.Options.Principal that names the caller of a request
// as an a2a-go server does: it runs interceptors (the server's authentication, the
// a2asrv.CallInterceptors it passes to a2asrv.WithCallInterceptors) on an
// a2asrv.CallContext made from the request's headers, as a2a-go's JSON-RPC and REST
// transports make it, and returns [CallerOf] that call context. The interceptors run
// before the request is decoded: their Request has no payload and the call context
// names no method nor tenant, so interceptors that read them must be left out (pass
// the authenticating ones). An interceptor's error or early result refuses the keyed
// send (asking the client to authenticate), as does an unauthenticated user: wrap
// Principal to name anonymous callers that may share keys.
func Principal(interceptors ...a2asrv.CallInterceptor) func(r *http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		return Authenticate(r.Context(), a2asrv.NewServiceParams(r.Header), interceptors...)
	}
}

// Authenticate runs interceptors on an a2asrv.CallContext made from params (the
// request's headers, or a gRPC call's metadata) as [Principal] does, and returns
// [CallerOf] it, or an error asking the client to authenticate when an interceptor
// refused the call.
func Authenticate(ctx context.Context, params *a2asrv.ServiceParams, interceptors ...a2asrv.CallInterceptor) (string, error) {
	ctx, callCtx := a2asrv.NewCallContext(ctx, params)
	for _, i := range interceptors {
		var early any
		var err error
		if ctx, early, err = i.Before(ctx, callCtx, &a2asrv.Request{}); err != nil || early != nil {
			return "", errUnauthenticated
		}
	}
	return CallerOf(callCtx), nil
}

// CallerOf returns the name of the authenticated user of callCtx, as authentication
// set it (a2asrv.CallContext.User), or "" when there is none or it is not
// authenticated. It is the owner a2a-go's task store records
// (a2asrv.NewTaskStoreAuthenticator), so that the key and the task are bound to the
// same caller.
func CallerOf(callCtx *a2asrv.CallContext) string {
	if callCtx == nil || callCtx.User == nil || !callCtx.User.Authenticated {
		return ""
	}
	return callCtx.User.Name
}
