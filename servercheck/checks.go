package servercheck

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// The checks, in the order they run on each interface.
var (
	checkInterface = Check{ID: "interface", Title: "The checker speaks the interface's binding", Spec: "§9"}
	checkMalformed = Check{ID: "malformed-keys", Spec: "§2 key format, §3 malformed",
		Title: "Malformed keys are refused in order (too short, too long, bad character, not a string) and nothing is created"}
	checkCutBody = Check{ID: "cut-request", Spec: "§8, §3 certainly failed",
		Title: "A send cut off in the middle of its body holds no key: its identical retry runs"}
	checkReplay = Check{ID: "replay", Spec: "§3 retry, task known",
		Title: "An identical retry gets the first attempt's task"}
	checkMessageReplay = Check{ID: "message-replay", Spec: "§3 retry, Message reply",
		Title: "An identical retry of a send answered with a Message gets the same Message"}
	checkReuse = Check{ID: "key-reuse", Spec: "§3 same key, different messageId",
		Title: "A key reused by another message is refused (already held), disclosing nothing of the holder"}
	checkLost = Check{ID: "lost-answer", Spec: "§1, §3 outcome unknown",
		Title: "After a first attempt whose answer was lost (the checker cut its connection), identical retries all name one task"}
	checkConcurrent = Check{ID: "concurrent", Spec: "§3 first time seen, §5 exactly once",
		Title: "Concurrent identical sends all name one task"}
	checkStream = Check{ID: "stream-retry", Spec: "§3 retry, streaming",
		Title: "A streaming retry's first event is the first attempt's task, and it follows the task's live events to the end"}
	checkDuringRun = Check{ID: "retry-during-run", Spec: "§3 in flight, §6 retries during a long run",
		Title: "A retry while the first attempt runs gets its task (or 409 with Retry-After)"}
	checkContextID = Check{ID: "context-id", Spec: "§3 scope (never the context id)",
		Title: "A retry naming another context id does not run again: it gets the task (or, with the content check on, a conflict)"}
	checkUnkeyed = Check{ID: "unkeyed", Spec: "§2 no key",
		Title: "Unkeyed sends pass through untouched"}
	checkHeaderCarrier = Check{ID: "header-carrier", Spec: "§2 second carrier",
		Title: "The Idempotency-Key request header is honoured alone, and must equal the metadata key"}
	checkExtHeader = Check{ID: "extensions-header", Spec: "§3 A2A-Extensions",
		Title: "Every answer to a keyed send carries A2A-Extensions naming the extension"}
	checkRPCID = Check{ID: "jsonrpc-id", Spec: "§3 new request's id",
		Title: "Every JSON-RPC answer (replays, errors and stream events included) carries the request's own id"}
	checkMarker = Check{ID: "replayed-marker", Spec: "§3 Idempotent-Replayed",
		Title: "Idempotent-Replayed: true on every answer served from a first attempt, never on a first send"}
)

// Checks lists every check, the card's first, in the order they run.
var Checks = []Check{checkCard, checkInterface, checkMalformed, checkCutBody, checkReplay, checkMessageReplay,
	checkReuse, checkLost, checkConcurrent, checkStream, checkDuringRun, checkContextID, checkUnkeyed, checkHeaderCarrier,
	checkExtHeader, checkRPCID, checkMarker, checkCrossInterface, checkTenantScope}

// session is the run of the checks on one interface, and the answers they collected
// for the checks that look at every answer.
type session struct {
	c     *client
	iface Interface

	mu      sync.Mutex
	keyed   []*answer   // answers to keyed sends
	rpc     []*answer   // JSON-RPC answers
	unkeyed []*answer   // answers to unkeyed sends
	firsts  []*answer   // answers that were certainly first sends
	replays []*answer   // answers that were certainly served from a first attempt
	groups  [][]*answer // concurrent identical sends: at most one is a first send
	// replier is what the server answers a keyed send with: kindTask or
	// kindMessage, once seen.
	replier kind
	// The replay check runs once for replay and message-replay.
	replayDone                  bool
	replayResult, messageResult Result
}

// checkInterface runs every wanted check on one interface.
func (c *client) checkInterface(ctx context.Context, iface Interface) []Result {
	s := &session{c: c, iface: iface}
	if !iface.checkable() {
		why := "the checker speaks JSON-RPC and HTTP+JSON only"
		if iface.Binding == BindingGRPC {
			why = "gRPC is not checked: the checker speaks JSON-RPC and HTTP+JSON only; check a JSON-RPC or HTTP+JSON interface served with the same key index"
		}
		return []Result{{Check: checkInterface, Interface: iface.String(), Status: NotChecked, Detail: why}}
	}
	type step struct {
		check Check
		run   func(context.Context) Result
	}
	steps := []step{
		{checkMalformed, s.malformed},
		{checkCutBody, s.cutBody},
		{checkReplay, s.replay},
		{checkMessageReplay, s.messageReplay},
		{checkReuse, s.reuse},
		{checkLost, s.lostAnswer},
		{checkConcurrent, s.concurrent},
		{checkStream, s.streamRetry},
		{checkDuringRun, s.duringRun},
		{checkContextID, s.contextID},
		{checkUnkeyed, s.unkeyedSends},
		{checkHeaderCarrier, s.headerCarrier},
		{checkExtHeader, s.extensionsHeader},
		{checkRPCID, s.rpcIDs},
		{checkMarker, s.marker},
	}
	var out []Result
	for _, st := range steps {
		if !c.opts.wanted(st.check.ID) {
			continue
		}
		if st.check == checkRPCID && iface.Binding != BindingJSONRPC {
			continue
		}
		var r Result
		if err := ctx.Err(); err != nil {
			r = Result{Status: NotChecked, Detail: "the run's time (Options.Timeout) was up"}
		} else {
			r = st.run(ctx)
		}
		r.Check, r.Interface = st.check, iface.String()
		out = append(out, r)
	}
	return out
}

// newSend returns a keyed unary send with a fresh key, message id and a text naming
// the check.
func (s *session) newSend(check string) send {
	id := newID("")
	return send{iface: s.iface, messageID: "check-" + id, key: idempotency.NewKey(),
		text: s.c.opts.Text + " (" + check + " " + id[:8] + ")"}
}

// first records a, the answer to a first send; replayed, one served from a first
// attempt; other, any other.
func (s *session) first(a *answer) *answer { return s.record(a, &s.firsts) }

func (s *session) replayed(a *answer) *answer { return s.record(a, &s.replays) }

func (s *session) other(a *answer) *answer { return s.record(a, nil) }

func (s *session) record(a *answer, role *[]*answer) *answer {
	if a.err != nil {
		return a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if role != nil {
		*role = append(*role, a)
	}
	return a
}

// do sends snd, records the answer where the checks of every answer see it, and
// returns it.
func (s *session) do(ctx context.Context, snd send, onEvent func(outcome) bool) *answer {
	a := s.c.do(ctx, snd, onEvent)
	if a.err != nil {
		return a
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A send keyed by the header alone is keyed or unkeyed as the server reads the
	// header: headerCarrier records it once that is decided.
	switch {
	case snd.key != nil:
		s.keyed = append(s.keyed, a)
	case snd.headerKey == "":
		s.unkeyed = append(s.unkeyed, a)
	}
	if s.iface.Binding == BindingJSONRPC {
		s.rpc = append(s.rpc, a)
	}
	return a
}

// notChecked is the result of a check that could not go on because a request got no
// answer.
func notChecked(a *answer, what string) Result {
	return Result{Status: NotChecked, Detail: what + ": " + a.describe(), Exchanges: []*Exchange{a.ex}}
}

func fail(detail string, exs ...*Exchange) Result {
	return Result{Status: Fail, Detail: detail, Exchanges: exs}
}

func pass(detail string) Result { return Result{Status: Pass, Detail: detail} }

// produced reports whether a is a task or a Message: what a send that ran answers.
func produced(a *answer) bool { return a.err == nil && (a.kind == kindTask || a.kind == kindMessage) }

// product names what a produced: "task <id>" or "Message <id>".
func product(a *answer) string {
	if a.kind == kindMessage {
		return "Message " + a.messageID
	}
	return "task " + a.taskID
}

// sameProduct reports whether a and b name the same task, or the same Message.
func sameProduct(a, b *answer) bool {
	if a.kind != b.kind {
		return false
	}
	if a.kind == kindMessage {
		return a.messageID == b.messageID
	}
	return a.taskID == b.taskID && a.taskID != ""
}

// inFlight reports whether a is the 409 of a retry that came while the first
// attempt had bound nothing yet.
func inFlight(a *answer) bool { return a.err == nil && a.status == http.StatusConflict }

// refusedAsInvalid reports whether a is the binding's invalid-params refusal:
// JSON-RPC -32602, HTTP+JSON 400 (INVALID_ARGUMENT when the body names a status).
func (s *session) refusedAsInvalid(a *answer) bool {
	if a.err != nil || a.kind != kindError {
		return false
	}
	if s.iface.Binding == BindingJSONRPC {
		return a.code == -32602
	}
	status := a.status
	if a.sse {
		status = a.code
	}
	return status == http.StatusBadRequest && (a.grpcStatus == "" || a.grpcStatus == "INVALID_ARGUMENT")
}

// refusal describes the binding's invalid-params refusal.
func (s *session) refusal() string {
	if s.iface.Binding == BindingJSONRPC {
		return "a JSON-RPC -32602 error"
	}
	return "HTTP 400 INVALID_ARGUMENT"
}

// retryAfter returns the delay a's Retry-After asks for, bounded to [100ms, 2s],
// and whether it had one.
func retryAfter(a *answer) (time.Duration, bool) {
	v := a.header.Get("Retry-After")
	if v == "" {
		return 500 * time.Millisecond, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 500 * time.Millisecond, true
	}
	return min(max(time.Duration(n)*time.Second, 100*time.Millisecond), 2*time.Second), true
}

// untilProduced sends snd until an answer is not a 409, at most tries times,
// waiting as each 409's Retry-After asks (bounded). It returns every answer, the
// last one last.
func (s *session) untilProduced(ctx context.Context, snd send, tries int) []*answer {
	var out []*answer
	for i := 0; i < tries; i++ {
		a := s.do(ctx, snd, nil)
		out = append(out, a)
		if !inFlight(a) {
			break
		}
		d, _ := retryAfter(a)
		select {
		case <-ctx.Done():
			return out
		case <-time.After(d):
		}
	}
	return out
}

// triesFor is how many times untilProduced asks: enough to wait out an agent that
// takes AgentDelay, plus a few seconds.
func (s *session) triesFor() int {
	return 6 + int(s.c.opts.AgentDelay/(500*time.Millisecond))
}

// firstSend sends snd, a keyed send with a fresh key, and records its answer as a
// first send's. It returns the result to report instead when the answer is not a
// task or a Message.
func (s *session) firstSend(ctx context.Context, snd send) (*answer, *Result) {
	a := s.do(ctx, snd, nil)
	s.learn(a)
	if a.err != nil {
		r := notChecked(a, "the first send got no answer")
		return a, &r
	}
	if !produced(a) {
		r := fail("a keyed first send got "+a.describe()+", want a task or a Message", a.ex)
		return a, &r
	}
	s.first(a)
	return a, nil
}

// learn records what the server answers keyed sends with.
func (s *session) learn(a *answer) {
	if s.replier == kindNone && produced(a) {
		s.replier = a.kind
	}
}
