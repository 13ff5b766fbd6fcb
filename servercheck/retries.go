package servercheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
)

// reuse: the same key on another message is refused, with "already held", and the
// refusal names nothing of the first message.
func (s *session) reuse(ctx context.Context) Result {
	first := s.newSend("key-reuse")
	a, stop := s.firstSend(ctx, first)
	if stop != nil {
		return *stop
	}
	other := s.newSend("key-reuse other")
	other.key = first.key
	b := s.other(s.do(ctx, other, nil))
	switch {
	case b.err != nil:
		return notChecked(b, "the send of another message with the same key got no answer")
	case produced(b):
		return fail(fmt.Sprintf("another message with the key of %s was accepted: %s; want %s with \"already held\"", product(a), product(b), s.refusal()), a.ex, b.ex)
	case !s.refusedAsInvalid(b):
		return fail(fmt.Sprintf("another message with a held key got %s, want %s with \"already held\"", b.describe(), s.refusal()), a.ex, b.ex)
	case !strings.Contains(strings.ToLower(b.message), "already held"):
		return fail(fmt.Sprintf("another message with a held key was refused, but the message lacks \"already held\": %q", cut(b.message, 200)), a.ex, b.ex)
	}
	for _, secret := range []struct{ what, v string }{
		{"the holder's messageId", first.messageID}, {"the holder's text", first.text},
		{"the holder's task id", a.taskID}, {"the holder's Message id", a.messageID},
	} {
		if secret.v != "" && bytes.Contains(b.body, []byte(secret.v)) {
			return fail("the refusal of another message with a held key discloses "+secret.what+" ("+secret.v+")", a.ex, b.ex)
		}
	}
	return pass(fmt.Sprintf("refused with %s, \"already held\", disclosing nothing of the holder", s.refusal()))
}

// lostAnswer: the checker writes a whole keyed send and closes the connection
// without reading the answer, then retries: every retry names one task.
func (s *session) lostAnswer(ctx context.Context) Result {
	snd := s.newSend("lost-answer")
	lost := s.c.cutSend(ctx, snd, cutAfterRequest)
	if lost.err != nil {
		return notChecked(lost, "the first attempt could not be sent")
	}
	exs := []*Exchange{lost.ex}
	answers := s.untilProduced(ctx, snd, s.triesFor())
	conflicts := len(answers) - 1
	a := answers[len(answers)-1]
	exs = append(exs, a.ex)
	switch {
	case a.err != nil:
		return notChecked(a, "the retry got no answer")
	case inFlight(a):
		return fail(fmt.Sprintf("%d retries after the lost answer all got 409: the key stayed in flight past the checker's wait (%v of agent delay hinted)",
			len(answers), s.c.opts.AgentDelay), exs...)
	case !produced(a):
		return fail("the retry after the lost answer got "+a.describe()+", want the first attempt's task or Message", exs...)
	}
	s.learn(a)
	// Two more retries, which come after the task was answered: replays for sure.
	for i := 0; i < 2; i++ {
		b := s.do(ctx, snd, nil)
		exs = append(exs, b.ex)
		switch {
		case b.err != nil:
			return notChecked(b, "a later retry got no answer")
		case !produced(b):
			return fail(fmt.Sprintf("retry %d after the lost answer got %s, an earlier one %s", i+2, b.describe(), product(a)), exs...)
		case !sameProduct(a, b):
			return fail(fmt.Sprintf("retries after the lost answer name two products, %s and %s: the send ran twice", product(a), product(b)), exs...)
		}
		s.replayed(b)
	}
	detail := fmt.Sprintf("3 retries name %s", product(a))
	if conflicts > 0 {
		detail += fmt.Sprintf(" (after %d answers 409 with Retry-After while the first attempt was in flight)", conflicts)
	}
	return pass(detail + "; one run inferred from task identity (only the server can count its runs)")
}

// concurrent: Options.Concurrency identical sends at once all name one task (the
// ones answered 409 are retried until they get it).
func (s *session) concurrent(ctx context.Context) Result {
	snd := s.newSend("concurrent")
	n := s.c.opts.Concurrency
	answers := make([]*answer, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			answers[i] = s.do(ctx, snd, nil)
		}()
	}
	close(gate)
	wg.Wait()
	var group []*answer
	var ref *answer
	conflicts := 0
	for i, a := range answers {
		if inFlight(a) {
			conflicts++
			if _, ok := retryAfter(a); !ok {
				return fail("a concurrent identical send got 409 without Retry-After", a.ex)
			}
			retried := s.untilProduced(ctx, snd, s.triesFor())
			a = retried[len(retried)-1]
			answers[i] = a
		}
		switch {
		case a.err != nil:
			return notChecked(a, "a concurrent send got no answer")
		case inFlight(a):
			return fail("a concurrent send got 409 for longer than the checker waits", a.ex)
		case !produced(a):
			return fail("a concurrent identical send got "+a.describe()+", want the task all of them name", a.ex)
		}
		if ref == nil {
			ref = a
			s.learn(a)
		} else if !sameProduct(ref, a) {
			return fail(fmt.Sprintf("concurrent identical sends name two products, %s and %s: the send ran twice", product(ref), product(a)), ref.ex, a.ex)
		}
		group = append(group, a)
	}
	s.mu.Lock()
	s.groups = append(s.groups, group)
	s.mu.Unlock()
	detail := fmt.Sprintf("%d concurrent sends name %s", n, product(ref))
	if conflicts > 0 {
		detail += fmt.Sprintf(" (%d answered 409 with Retry-After first, then got it)", conflicts)
	}
	return pass(detail + "; one run inferred from task identity")
}

// streamRetry: a streaming first send, and while its stream is open an identical
// streaming retry: the retry's first event is the task, its events are the task's,
// and it ends when the task does.
func (s *session) streamRetry(ctx context.Context) Result {
	snd := s.newSend("stream-retry")
	snd.stream = true
	firstEvent := make(chan outcome, 1)
	done := make(chan *answer, 1)
	go func() {
		sent := false
		a := s.do(ctx, snd, func(o outcome) bool {
			if !sent {
				sent = true
				firstEvent <- o
			}
			return true
		})
		done <- a
	}()
	var first outcome
	var a *answer
	select {
	case first = <-firstEvent:
	case a = <-done:
		// The answer ended, or was not a stream, before any event.
		if a.err != nil {
			return notChecked(a, "the streaming first send got no answer")
		}
		if len(a.events) == 0 {
			return fail("the streaming first send got no event: "+a.describe(), a.ex)
		}
		first = a.events[0]
	}
	if first.kind != kindTask && first.kind != kindMessage {
		if a == nil {
			a = <-done
		}
		return fail("the streaming first send's first event is "+first.kind.String()+", want a task or a Message: "+a.describe(), a.ex)
	}
	b := s.do(ctx, snd, nil)
	if a == nil {
		a = <-done
	}
	s.first(a)
	exs := []*Exchange{a.ex, b.ex}
	switch {
	case b.err != nil:
		return notChecked(b, "the streaming retry got no answer")
	case b.kind != first.kind:
		return fail(fmt.Sprintf("the streaming retry's first event is %s, but the first attempt's was %s", b.describe(), first.kind), exs...)
	case first.kind == kindMessage && b.messageID != first.messageID:
		return fail(fmt.Sprintf("the streaming retry got Message %s, the first attempt Message %s", b.messageID, first.messageID), exs...)
	case first.kind == kindMessage:
		s.replayed(b)
		return pass("the streaming retry got the first attempt's Message " + first.messageID)
	case b.taskID != first.taskID:
		return fail(fmt.Sprintf("the streaming retry's first event is task %s, but the first attempt's stream is task %s: the retry did not attach to the first attempt's task", b.taskID, first.taskID), exs...)
	}
	s.replayed(b)
	for _, ev := range b.events[1:] {
		if ev.taskID != "" && ev.taskID != first.taskID {
			return fail(fmt.Sprintf("the streaming retry of task %s carries an event of task %s", first.taskID, ev.taskID), exs...)
		}
		if ev.kind == kindError {
			return fail("the streaming retry ended with an error event: "+ev.message, exs...)
		}
	}
	end := b.last()
	live := !finalState(b.state)
	if live && !finalState(end.state) {
		return fail(fmt.Sprintf("the streaming retry joined task %s while %s and ended while it was still %q: it did not follow the task's live events to the end", first.taskID, b.state, end.state), exs...)
	}
	if live {
		return pass(fmt.Sprintf("the streaming retry's first event is task %s (%s), and it followed the live task to %s (%d events)", first.taskID, b.state, end.state, len(b.events)))
	}
	return pass(fmt.Sprintf("the streaming retry's first event is task %s (%s); the task had ended before the retry, so attaching to live events was not observed (hint a longer -agent-delay, or check against an agent that works a while)", first.taskID, b.state))
}

// duringRun: a blocking first send, and while it runs an identical retry: the retry
// gets the task (in whatever state), or 409 with Retry-After while the task is not
// known yet; the first attempt's answer names the same task.
func (s *session) duringRun(ctx context.Context) Result {
	snd := s.newSend("retry-during-run")
	done := make(chan *answer, 1)
	wrote := make(chan struct{})
	var once sync.Once
	traced := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) },
	})
	start := time.Now()
	go func() { done <- s.do(traced, snd, nil) }()
	// The retry leaves once the first attempt is written, and the server had a
	// moment to start on it.
	var a *answer
	select {
	case <-wrote:
	case a = <-done:
	}
	wait := min(max(s.c.opts.AgentDelay/4, 50*time.Millisecond), time.Second)
	time.Sleep(wait)
	b := s.do(ctx, snd, nil)
	retryAt := b.elapsed
	if a == nil {
		a = <-done
	}
	firstTook := time.Since(start)
	if a.err != nil {
		return notChecked(a, "the first attempt got no answer")
	}
	s.first(a)
	s.learn(a)
	exs := []*Exchange{a.ex, b.ex}
	if !produced(a) {
		return fail("the first attempt got "+a.describe()+", want a task or a Message", exs...)
	}
	during := a.elapsed > wait
	note := ""
	if !during {
		note = fmt.Sprintf("; the first attempt had answered (in %v) before the retry was sent, so this was not observed during a run (hint -agent-delay)", a.elapsed.Round(time.Millisecond))
	}
	switch {
	case b.err != nil:
		return notChecked(b, "the retry got no answer")
	case inFlight(b):
		_, ok := retryAfter(b)
		if !ok {
			return fail("the retry during the run got 409 without Retry-After", exs...)
		}
		c := s.untilProduced(ctx, snd, s.triesFor())
		last := c[len(c)-1]
		exs = append(exs, last.ex)
		if !produced(last) || !sameProduct(a, last) {
			return fail(fmt.Sprintf("after the run, the retry got %s, the first attempt %s", last.describe(), product(a)), exs...)
		}
		s.replayed(last)
		return pass(fmt.Sprintf("409 with Retry-After (%s s) during the run: the server did not know the task yet (SPEC allows this); a later retry got %s%s",
			b.header.Get("Retry-After"), product(a), note))
	case !produced(b):
		return fail("the retry during the run got "+b.describe()+", want the first attempt's task (or 409 with Retry-After)", exs...)
	case !sameProduct(a, b):
		return fail(fmt.Sprintf("the retry during the run got %s, the first attempt %s: the send ran twice", product(b), product(a)), exs...)
	}
	s.replayed(b)
	state := ""
	if b.kind == kindTask {
		state = " (" + b.state + ")"
	}
	return pass(fmt.Sprintf("the retry got %s%s in %v; the first attempt took %v%s", product(b), state,
		retryAt.Round(time.Millisecond), firstTook.Round(time.Millisecond), note))
}

// contextID: a keyed send, then its retry naming another context id. The key's scope
// never includes the context id, so the retry is the same send: it gets the task, or,
// where the server compares the retry's content with the first attempt's (SPEC's
// optional content check), is refused as a conflict; it never runs again.
func (s *session) contextID(ctx context.Context) Result {
	snd := s.newSend("context-id")
	a, stop := s.firstSend(ctx, snd)
	if stop != nil {
		return *stop
	}
	snd.contextID = newID("check-ctx-")
	answers := s.untilProduced(ctx, snd, s.triesFor())
	b := answers[len(answers)-1]
	switch {
	case b.err != nil:
		return notChecked(b, "the retry got no answer")
	case produced(b) && !sameProduct(a, b):
		return fail(fmt.Sprintf("the retry naming another context id got %s, the first attempt %s: the send ran twice (the context id is never part of a key's scope)", product(b), product(a)), a.ex, b.ex)
	case produced(b):
		s.replayed(b)
		return pass("the retry naming another context id got " + product(b) + " again")
	case b.kind == kindError && !inFlight(b):
		return pass("the retry naming another context id was refused (" + b.describe() + "): the server compares a retry's content with the first attempt's; nothing ran again")
	}
	return fail("the retry naming another context id got "+b.describe(), a.ex, b.ex)
}

// unkeyedSends: two unkeyed sends run as the server runs them, unrefused.
func (s *session) unkeyedSends(ctx context.Context) Result {
	var got []string
	for i := 0; i < 2; i++ {
		snd := s.newSend("unkeyed")
		snd.key = nil
		a := s.do(ctx, snd, nil)
		switch {
		case a.err != nil:
			return notChecked(a, "an unkeyed send got no answer")
		case !produced(a):
			return fail("an unkeyed send got "+a.describe()+", want what the server answers any send with", a.ex)
		}
		got = append(got, product(a))
	}
	return pass("two unkeyed sends got " + strings.Join(got, " and "))
}

// headerCarrier: a send keyed by the Idempotency-Key header alone, twice: one task
// means the header is honoured (claimed); then a header that differs from the
// metadata key, and a malformed header, are refused.
func (s *session) headerCarrier(ctx context.Context) Result {
	snd := s.newSend("header-carrier")
	snd.key, snd.headerKey = nil, idempotency.NewKey()
	a := s.do(ctx, snd, nil)
	if a.err != nil {
		return notChecked(a, "the header-keyed send got no answer")
	}
	if !produced(a) {
		return Result{Status: NotClaimed, Detail: "a send keyed by the Idempotency-Key header alone got " + a.describe() + ": the header carrier is not claimed", Exchanges: []*Exchange{a.ex}}
	}
	b := s.do(ctx, snd, nil)
	if b.err != nil {
		return notChecked(b, "the header-keyed retry got no answer")
	}
	if !produced(b) || !sameProduct(a, b) {
		return Result{Status: NotClaimed, Detail: fmt.Sprintf("two identical sends keyed by the Idempotency-Key header alone got %s and %s: the server does not honour the header (not claimed)", product(a), b.describe())}
	}
	s.mu.Lock()
	s.keyed = append(s.keyed, a, b)
	s.mu.Unlock()
	s.first(a)
	s.replayed(b)
	mismatch := s.newSend("header-carrier mismatch")
	mismatch.headerKey = idempotency.NewKey()
	c := s.other(s.do(ctx, mismatch, nil))
	exs := []*Exchange{a.ex, b.ex, c.ex}
	if c.err != nil {
		return notChecked(c, "the send with two different keys got no answer")
	}
	if !s.refusedAsInvalid(c) {
		return fail(fmt.Sprintf("the server honours the Idempotency-Key header, but a send whose header and metadata keys differ got %s, want %s", c.describe(), s.refusal()), exs...)
	}
	bad := s.newSend("header-carrier malformed")
	bad.key, bad.headerKey = nil, "short"
	d := s.other(s.do(ctx, bad, nil))
	if d.err != nil {
		return notChecked(d, "the send with a malformed header key got no answer")
	}
	s.mu.Lock()
	s.keyed = append(s.keyed, d)
	s.mu.Unlock()
	if !s.refusedAsInvalid(d) {
		return fail(fmt.Sprintf("a malformed Idempotency-Key header (too short) got %s, want %s", d.describe(), s.refusal()), append(exs, d.ex)...)
	}
	return pass(fmt.Sprintf("the header alone deduplicates (%s twice); a header differing from the metadata key, and a malformed one, are refused", product(a)))
}

// extensionsHeader: every answer to a keyed send (except the refusal of an index
// that cannot honour keys) carries A2A-Extensions with the URI.
func (s *session) extensionsHeader(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.keyed {
		if a.kind == kindError && (a.code == -32004 || a.grpcStatus == "UNIMPLEMENTED") {
			continue
		}
		n++
		if !listsExtension(a.header) {
			return fail(fmt.Sprintf("an answer to a keyed send (%s) lacks the response header A2A-Extensions: %s", a.describe(), idempotency.ExtensionURI), a.ex)
		}
	}
	if n == 0 {
		return Result{Status: NotChecked, Detail: "no keyed send was answered"}
	}
	return pass(fmt.Sprintf("all %d answers to keyed sends carry it", n))
}

// listsExtension reports whether h's A2A-Extensions (one line per URI, or
// comma-separated; X-A2A-Extensions, v0.3's name, too) names the extension.
func listsExtension(h http.Header) bool {
	for _, v := range append(h.Values("A2A-Extensions"), h.Values("X-A2A-Extensions")...) {
		for _, uri := range strings.Split(v, ",") {
			if strings.TrimSpace(uri) == idempotency.ExtensionURI {
				return true
			}
		}
	}
	return false
}

// rpcIDs: every JSON-RPC answer carries the request's id, in every event.
func (s *session) rpcIDs(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.rpc {
		for _, ev := range a.events {
			if !ev.hasRPCEnvelope {
				continue
			}
			n++
			if !sameJSON(ev.rpcID, a.reqID) {
				return fail(fmt.Sprintf("a JSON-RPC answer (%s) carries id %s, the request id %s", a.describe(), ev.rpcID, a.reqID), a.ex)
			}
		}
	}
	return pass(fmt.Sprintf("all %d JSON-RPC answers and events carry their request's id", n))
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return x == y
}

// marker: Idempotent-Replayed is optional until a server sends it; then it must be
// on every answer served from a first attempt and on no first send.
func (s *session) marker(context.Context) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	marked := func(a *answer) bool { return a.header.Get("Idempotent-Replayed") != "" }
	for _, a := range s.firsts {
		if marked(a) {
			return fail("a first send's answer carries Idempotent-Replayed: "+a.header.Get("Idempotent-Replayed")+"; a first send never does", a.ex)
		}
	}
	for _, a := range s.unkeyed {
		if marked(a) {
			return fail("an unkeyed send's answer carries Idempotent-Replayed", a.ex)
		}
	}
	claimed := false
	for _, a := range append(s.keyed, s.unkeyed...) {
		if marked(a) {
			claimed = true
		}
	}
	if !claimed {
		return Result{Status: NotClaimed, Detail: fmt.Sprintf("no answer carries Idempotent-Replayed (%d replays seen): the marker is not claimed", len(s.replays))}
	}
	for _, a := range s.replays {
		if v := a.header.Get("Idempotent-Replayed"); v != "true" {
			return fail(fmt.Sprintf("the server marks replays, but this replay (%s) carries Idempotent-Replayed %q, want \"true\"", a.describe(), v), a.ex)
		}
	}
	for _, g := range s.groups {
		unmarked := 0
		for _, a := range g {
			if !marked(a) {
				unmarked++
			}
		}
		if unmarked > 1 {
			return fail(fmt.Sprintf("%d of %d concurrent identical sends are unmarked, but only one of them is the first send", unmarked, len(g)), g[0].ex)
		}
	}
	return pass(fmt.Sprintf("all %d replays are marked, no first send is", len(s.replays)))
}
