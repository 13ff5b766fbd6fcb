package servercheck

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// replay: an identical retry of a keyed unary send gets the same task (or Message).
func (s *session) replay(ctx context.Context) Result {
	r, _ := s.replayPair(ctx)
	return r
}

// messageReplay reports the Message half of the replay check.
func (s *session) messageReplay(ctx context.Context) Result {
	s.replayPair(ctx)
	if s.messageResult.Status == "" {
		return Result{Status: NotApplicable, Detail: "the server answers keyed sends with tasks, not Messages (steer an agent that can reply with a Message with Options.Text)"}
	}
	return s.messageResult
}

// replayPair sends a keyed send and its identical retry, once; it also sets the
// message-replay result when the server answers with Messages.
func (s *session) replayPair(ctx context.Context) (Result, bool) {
	if s.replayDone {
		return s.replayResult, true
	}
	s.replayDone = true
	snd := s.newSend("replay")
	a, stop := s.firstSend(ctx, snd)
	res := func() Result {
		if stop != nil {
			return *stop
		}
		answers := s.untilProduced(ctx, snd, s.triesFor())
		b := answers[len(answers)-1]
		switch {
		case b.err != nil:
			return notChecked(b, "the retry got no answer")
		case inFlight(b):
			return fail(fmt.Sprintf("the retry of a send already answered with %s got 409 %d times: the first attempt's product is known", product(a), len(answers)), a.ex, b.ex)
		case !produced(b):
			return fail(fmt.Sprintf("the retry of a send answered with %s got %s, want the same %s", product(a), b.describe(), a.kind), a.ex, b.ex)
		case !sameProduct(a, b):
			return fail(fmt.Sprintf("the retry got %s, but the first attempt was answered with %s: the send ran twice", product(b), product(a)), a.ex, b.ex)
		case a.kind == kindMessage && a.text != b.text:
			return fail(fmt.Sprintf("the retry got Message %s again, but its text differs: %q, first %q", b.messageID, cut(b.text, 80), cut(a.text, 80)), a.ex, b.ex)
		}
		s.replayed(b)
		return pass("the retry got " + product(b) + " again")
	}()
	if a.kind == kindMessage {
		s.messageResult = res
		s.replayResult = Result{Status: NotApplicable, Detail: "the server answered the keyed send with a Message: see message-replay"}
	} else {
		s.replayResult = res
	}
	return s.replayResult, false
}

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
