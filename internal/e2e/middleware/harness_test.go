package middleware_test

import (
	"net/http"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/internal/testkit/mwtest"
)

// The harness is the middleware's (internal/testkit/mwtest): a real a2a-go v2.4.0
// server behind the middleware, driven by a2a-go's own clients over HTTP. Here it also
// serves a2a-go's A2A v0.3 handlers (a2acompat/a2av0) over the same request handler,
// JSON-RPC at mwtest.JSONRPC03Path and HTTP+JSON at /v1/… (its own prefix, at the
// root), and its clients speak a2av0's v0.3 transports too.

// A2A v0.3's dialects.
var (
	jsonrpc03 = mwtest.Dialect{Binding: "JSONRPC", Version: "0.3"}
	rest03    = mwtest.Dialect{Binding: "HTTP+JSON", Version: "0.3"}
)

// newHarness returns mwtest's harness with A2A v0.3 served and spoken.
func newHarness(t *testing.T, cfg mwtest.Config) *mwtest.Harness {
	t.Helper()
	mount := cfg.Mount
	cfg.Mount = func(mux *http.ServeMux, rh a2asrv.RequestHandler) {
		mux.Handle(mwtest.JSONRPC03Path, a2av0.NewJSONRPCHandler(rh))
		mux.Handle(a2av0.RESTPathPrefix+"/", a2av0.NewRESTHandler(rh))
		if mount != nil {
			mount(mux, rh)
		}
	}
	cfg.Interface = func(d mwtest.Dialect, base string) *a2a.AgentInterface {
		switch d {
		case jsonrpc03:
			return &a2a.AgentInterface{URL: base + mwtest.JSONRPC03Path, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}
		case rest03:
			return &a2a.AgentInterface{URL: base, ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: a2av0.Version}
		}
		return nil
	}
	cfg.ClientOptions = func(hc *http.Client) []a2aclient.FactoryOption {
		return []a2aclient.FactoryOption{
			a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
			a2av0.WithRESTTransport(a2av0.RESTTransportConfig{Client: hc}),
		}
	}
	return mwtest.New(t, cfg)
}
