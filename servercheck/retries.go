package servercheck

import (
	"context"
	"fmt"
	"net/http/httptrace"
	"sync"
	"time"
)

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
