// Package servercheck checks, from outside and from the wire alone, whether an A2A
// server keeps the promise it makes when its agent card lists the idempotency
// extension ([idempotency.ExtensionURI]): that a keyed send may be retried because
// the retry cannot duplicate work (SPEC §2, §3, §9). The command
// cmd/a2a-idempotency-check runs it; the kit's own tests run it against the kit's
// servers, so the checker and the kit cannot drift apart.
//
//	report, err := servercheck.Run(ctx, "https://agent.example.com", servercheck.Options{})
//	if err != nil { … }               // the card could not be read: nothing was checked
//	report.WriteText(os.Stdout)       // a table, the verdict, the first failing exchange
//	if !report.OK() { os.Exit(1) }
//
// # What it checks
//
// Run reads the agent card (/.well-known/agent-card.json, then
// /.well-known/agent.json; A2A v1.0's supportedInterfaces and v0.3's url,
// preferredTransport and additionalInterfaces), reports whether the extension is
// advertised, and, when it is (or Options.Force is set), runs every check on every
// JSON-RPC and HTTP+JSON interface the card lists, with the interface's tenant, in
// the interface's protocol version (v1.0 or v0.3), the interfaces side by side. gRPC
// interfaces, and bindings it does not know, are named in the report as not checked,
// with the reason (they do not make a run incomplete). Then two checks across
// interfaces: a retry through every other interface of the same tenant (another
// binding, another protocol version), and one key on two tenants. The checks are listed in [Checks], each with its SPEC
// reference; every failure carries the exchanges that showed it.
//
// The verdict is "pass" only when no check failed and every check of an interface
// the checker speaks ran; "fail" when one failed; "incomplete" when none failed but
// some could not run (the deadline, the request budget, a server that stopped
// answering); "not advertised" when the card does not list the extension.
//
// The checker sees what a client sees. Where only the server can count the agent's
// runs (a lost answer, concurrent sends), it infers them from task identity: every
// answer naming one task means one task was created, and it says so in the result.
// What the server does not show it does not fail: the Idempotent-Replayed marker is
// reported as not claimed until an answer shows it (then it must hold: a first send
// marked as replayed fails). Whether the server claims the Idempotency-Key header
// carrier is decided by behaviour: a send keyed by the header alone, retried, and a
// send whose header and metadata keys differ. Both deduplicated and refused: claimed,
// and checked; neither: not claimed; one without the other: a failure.
//
// # Bounds
//
// Every check sends a bounded number of requests: about 36 per interface with the
// default Options when nothing answers 409, never more than Options.MaxRequests in
// all (default 300). Run stops at Options.Timeout (default 3 minutes). Against the
// stdlib example (three HTTP interfaces, an agent that works 2 s) a run takes about
// 24 s and 113 requests; against the official JS SDK's server behind the sidecar
// (four interfaces, A2A v1.0 and v0.3) 28 s and 161. Options.AgentDelay tells the checker how long the agent
// takes to answer a send: it waits that much longer for answers, and sends the
// retries of the "during a run" checks while the run should still be going. Every
// send carries a fresh random key and message id, and a text that names the check,
// so the checker's tasks are easy to find and never collide.
package servercheck
