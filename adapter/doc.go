// Package adapter integrates the kit with the official Go A2A SDK,
// github.com/a2aproject/a2a-go/v2 (written against v2.4.0), on the server side.
//
// In front of an opaque server the middleware learns a task's id only from the
// response, and a blocking SendMessage answers when the task is finished: a retry
// during a long run finds the key in flight with nothing to show. Behind the
// middleware, a2a-go hands the request context (with the middleware's claim) to the
// executor and to the task store, so this package binds the key to the task as soon
// as the task is stored, at the agent's first event, and never to a task that was not
// stored:
//
//   - [Executor] wraps an a2asrv.AgentExecutor. It tells the middleware when the
//     agent produced its first event (from then on a failed send keeps its key
//     pending rather than releasing it: the agent ran), and when the agent answers
//     with a Message instead of a task, it records the Message before a2a-go sees it,
//     so that a retry gets the same Message even when the first response never
//     reached the client. A follow-up (a message that names an existing task) is
//     bound before the agent runs: its task exists.
//   - The task store binds a new task's key: sqlstore/a2atasks in the transaction
//     that stores the task, any other store wrapped in [BindingStore] right after its
//     first save. Without either, the middleware binds the key from the answer's
//     first event.
//   - [FollowUpBinder] is an a2asrv.CallInterceptor that binds a follow-up send (a
//     message that names an existing task) as soon as the request arrives, so that a
//     failed binding is reported to the client as an error and leaves the task alone.
//   - [TaskReader] reads tasks from an a2a-go taskstore.Store for the middleware's
//     replays ([middleware.Options.Tasks]), instead of a GetTask round trip through
//     the HTTP handler.
//   - [SetMessageKey] and [MessageKey] put keys (fresh ones from
//     [idempotency.NewKey]) on and read them from *a2a.Message; [DeclareExtension]
//     declares the extension on an agent card before it is signed, and
//     [DeclaresExtension] reports whether a card declares it.
//
// Wiring, with the middleware in front of the a2a-go transports:
//
//	index := memstore.New(memstore.Options{})
//	exec := adapter.NewExecutor(agent, adapter.Options{})
//	tasks := adapter.NewBindingStore(taskstore.NewInMemory(nil), adapter.Options{})
//	handler := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(tasks),
//		a2asrv.WithCallInterceptors(adapter.NewFollowUpBinder(tasks, adapter.Options{})))
//	mux := http.NewServeMux()
//	mux.Handle("/jsonrpc", a2asrv.NewJSONRPCHandler(handler))
//	idem, err := middleware.New(index, middleware.Options{})
//	...
//	http.ListenAndServe(addr, idem(mux))
//
// An agent that fails before its first event stores no task and binds nothing: the
// middleware releases the key and an identical retry runs the agent again. A process
// that dies before the task's first save leaves the claim pending, and a retry runs
// the agent once its lease ends (at once on a sole instance that calls a2atasks'
// Restarted as it starts). Agents should therefore yield their first event (the
// submitted task) before they act on the world; a retry that comes before the first
// event waits up to the middleware's ReplayWait and then gets 409 with Retry-After.
//
// The hooks only see the middleware's claim when the request context reaches the
// executor and the task store, which a2a-go v2.4.0 guarantees in its default (local)
// mode: both run on context.WithoutCancel of the request context. In cluster mode
// (a2asrv.WithClusterMode) the context crosses a work queue through a ContextCodec and
// the claim does not survive: set [Options.RunUnclaimed] for the Executor there, which
// then runs keyed sends it finds unclaimed (with a warning), and the middleware binds
// the key from the response as it does in front of any other server. Otherwise the
// Executor refuses a keyed message without a claim ([ErrUnclaimed]): one that came
// through a binding the middleware does not see, such as gRPC, would run without
// deduplication.
//
// The client side (attaching keys and retrying ambiguous failures with a2aclient) is
// in package keyedclient.
package adapter
