// Package grpcbinding makes keyed sends idempotent on A2A's gRPC binding, as package
// middleware does on JSON-RPC and HTTP+JSON, for servers that serve a2a-go's
// a2apb.A2AServiceServer (a2agrpc.Handler from github.com/a2aproject/a2a-go/v2,
// written against v2.4.0).
//
// It is a module of its own (github.com/a2akit/idempotency/grpcbinding), so that users
// of the kit's root module do not inherit gRPC.
//
// The server side is [Interceptors]: gRPC server interceptors for SendMessage and
// SendStreamingMessage that run the same claim, wait, replay and release logic as the
// HTTP middleware ([middleware.Sends]), with the answers in the gRPC binding's shape
// (status codes with google.rpc.ErrorInfo and RetryInfo details). With the same index
// behind both, a send first made over JSON-RPC or HTTP+JSON and retried over gRPC, or
// the other way round, meets the same claim and runs once. The adapter
// (github.com/a2akit/idempotency/adapter) works behind them unchanged: it finds the
// claim in the call's context and binds the key before the agent runs.
//
//	kit, err := grpcbinding.New(index, grpcbinding.Options{})
//	if err != nil { ... }
//	srv := grpc.NewServer(kit.ServerOptions()...)
//	a2agrpc.NewHandler(handler).RegisterWith(srv)
//
// The client side is [WithKeyedTransport]: an a2aclient factory option that keys the
// sends of a2a-go's gRPC transport and retries them after ambiguous failures, as
// keyedclient.FactoryOptions does for the HTTP bindings, through the client
// interceptors [UnaryClientInterceptor] and [StreamClientInterceptor].
//
// A2A v1.0's JSON is the ProtoJSON of its protos, so the JSON the HTTP bindings store
// (a Message reply bound to a key) and read (a task from a [middleware.TaskSource])
// converts to and from a2a-go's protos with protojson; the package's tests hold that
// conversion to a2a-go's own pbconv field by field.
package grpcbinding
