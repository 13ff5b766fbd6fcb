package exampleserver

import (
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/a2akit/idempotency/adapter"
)

// Where the examples mount the A2A bindings, relative to the server's base URL. The
// card lists them, so every example must mount them here.
const (
	// JSONRPCPath is the JSON-RPC endpoint.
	JSONRPCPath = "/jsonrpc"
	// RESTPath is the prefix of the HTTP+JSON routes: POST /rest/message:send, ...
	RESTPath = "/rest"
	// TenantRESTPath is the prefix of the HTTP+JSON routes with a tenant segment:
	// POST /tenants/{tenant}/message:send, ...
	TenantRESTPath = "/tenants"
	// VarsPath serves the process's expvars, agent_runs among them.
	VarsPath = "/debug/vars"
)

// CardTenant is the tenant the agent card names on its tenant interface. The tenant
// routes accept any tenant; a client picks its own by setting the tenant on its
// requests.
const CardTenant = "demo"

// NewRequestHandler returns the a2a-go request handler that runs agent with the kit's
// adapter: adapter.Executor binds each keyed send's key to its task before the agent
// runs, so that a retry during a long run gets the task at once, and
// adapter.FollowUpBinder binds follow-ups (messages that name an existing task)
// before a2a-go touches the task. Serve it through the kit's middleware
// (middleware.New), which claims the keys the adapter binds.
func NewRequestHandler(agent a2asrv.AgentExecutor, logger *slog.Logger) a2asrv.RequestHandler {
	opts := adapter.Options{Logger: logger}
	return a2asrv.NewHandler(adapter.NewExecutor(agent, opts),
		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(opts)),
		a2asrv.WithLogger(logger))
}

// Card returns the agent card of a server whose base URL is base ("http://host:port"),
// with the bindings mounted at JSONRPCPath, RESTPath and TenantRESTPath.
//
// The card does not declare the idempotency extension: the middleware adds it to the
// card it serves, and only when its index can honour keys. (A server that signs its
// card declares it with adapter.DeclareExtension before signing.)
func Card(base string) *a2a.AgentCard {
	tenant := a2a.NewAgentInterface(base+TenantRESTPath, a2a.TransportProtocolHTTPJSON)
	tenant.Tenant = CardTenant
	return &a2a.AgentCard{
		Name:        "Echo",
		Description: "Echoes each message back after working for a while. Sends that carry an idempotency key run once.",
		Version:     "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{
			a2a.NewAgentInterface(base+JSONRPCPath, a2a.TransportProtocolJSONRPC),
			a2a.NewAgentInterface(base+RESTPath, a2a.TransportProtocolHTTPJSON),
			tenant,
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{
			ID:          "echo",
			Name:        "echo",
			Description: "Echoes the text of the message.",
			Tags:        []string{"echo"},
		}},
	}
}
