package conformance

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/a2akit/idempotency"
)

// checkBindWrongToken: Bind under a token that does not own the claim returns
// ErrNotOwner and changes nothing; once the key is bound, a wrong token is still
// refused.
func checkBindWrongToken(e *env) error {
	key, tok, other, err := e.refusesWrongTokens("Bind", func(key string, wrong idempotency.Token) error {
		return e.ix.Bind(e.ctx, "", key, wrong, boundB)
	})
	if err != nil {
		return err
	}
	// A bound key: the wrong token is refused, whether the index reports that it does
	// not own the key or that the key is bound to something else.
	for _, b := range []idempotency.Binding{boundA, boundB} {
		err := e.ix.Bind(e.ctx, "", key, other, b)
		if err := wantErr(fmt.Sprintf("Bind(%s, token %d, %s) of a key bound by token %d", where("", key), other, describeBinding(b), tok),
			err, idempotency.ErrNotOwner, idempotency.ErrAlreadyBound); err != nil {
			return err
		}
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
}

// checkBindIdempotent: binding the same task id, reply bytes, or both, again with the
// owner's token succeeds and changes nothing.
func checkBindIdempotent(e *env) error {
	for _, b := range []idempotency.Binding{boundA, repliedA, bothA} {
		key := e.key()
		tok, err := e.ownBound("", key, msgA, b)
		if err != nil {
			return err
		}
		again := idempotency.Binding{TaskID: b.TaskID, Reply: bytes.Clone(b.Reply)}
		if err := e.ix.Bind(e.ctx, "", key, tok, again); err != nil {
			return fmt.Errorf("Bind(%s) again with the same %s = %w; want nil", where("", key), describeBinding(b), err)
		}
		if _, err := e.wantHeld("", key, msgA, b); err != nil {
			return err
		}
	}
	return nil
}

// checkBindConflict: binding a bound key to something else, even with the owner's
// token, returns ErrAlreadyBound and keeps the first binding. The one change allowed,
// a reply added to a task id, is checked by BindTaskThenReply.
func checkBindConflict(e *env) error {
	cases := []struct{ first, second idempotency.Binding }{
		{boundA, boundB},
		{boundA, repliedA},
		{boundA, idempotency.Binding{TaskID: taskB, Reply: replyA}},
		{repliedA, repliedB},
		{repliedA, boundA},
		{repliedA, bothA},
		{bothA, idempotency.Binding{TaskID: taskA, Reply: replyB}},
	}
	for _, c := range cases {
		key := e.key()
		tok, err := e.ownBound("", key, msgA, c.first)
		if err != nil {
			return err
		}
		err = e.ix.Bind(e.ctx, "", key, tok, c.second)
		what := fmt.Sprintf("Bind(%s, owner's token, %s) of a key bound to %s", where("", key), describeBinding(c.second), describeBinding(c.first))
		if err := wantErr(what, err, idempotency.ErrAlreadyBound); err != nil {
			return err
		}
		if _, err := e.wantHeld("", key, msgA, c.first); err != nil {
			return err
		}
	}
	return nil
}

// checkBindTaskThenReply: a key bound to a task id alone may later be given a reply
// with the same task id (the agent answered with a Message after the task id was
// bound); retries then get both, binding both (or either alone) again succeeds,
// and neither a different
// reply nor a different task id is accepted afterwards.
func checkBindTaskThenReply(e *env) error {
	key := e.key()
	tok, err := e.ownBound("", key, msgA, boundA)
	if err != nil {
		return err
	}
	if err := e.bind("", key, tok, bothA); err != nil {
		return fmt.Errorf("adding a reply to a key bound to the same task id: %w", err)
	}
	if _, err := e.wantSame("", key, msgA, bothA); err != nil {
		return err
	}
	if err := e.bind("", key, tok, bothA); err != nil {
		return fmt.Errorf("again: %w", err)
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return fmt.Errorf("the task id alone, after the reply was added: %w", err)
	}
	if err := e.bind("", key, tok, idempotency.Binding{Reply: replyA}); err != nil {
		return fmt.Errorf("the reply alone, after it was added: %w", err)
	}
	for _, b := range []idempotency.Binding{{TaskID: taskA, Reply: replyB}, {TaskID: taskB, Reply: replyA}, boundB} {
		err := e.ix.Bind(e.ctx, "", key, tok, b)
		what := fmt.Sprintf("Bind(%s, owner's token, %s) of a key bound to %s", where("", key), describeBinding(b), describeBinding(bothA))
		if err := wantErr(what, err, idempotency.ErrAlreadyBound); err != nil {
			return err
		}
	}
	_, err = e.wantHeld("", key, msgA, bothA)
	return err
}

// checkBindNotHeld: Bind of a key never claimed, or released, returns ErrNotOwner and
// does not create the key.
func checkBindNotHeld(e *env) error {
	never := e.key()
	err := e.ix.Bind(e.ctx, "", never, 1, boundA)
	if err := wantErr("Bind of a key never claimed", err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	if err := e.wantAbsent("", never); err != nil {
		return err
	}
	key, tok, err := e.released()
	if err != nil {
		return err
	}
	err = e.ix.Bind(e.ctx, "", key, tok, boundA)
	if err := wantErr("Bind of a released key", err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	return e.wantAbsent("", key)
}

// checkReplyNotAliased: the index keeps its own copy of a reply. Changing the slice
// passed to Bind, or the one a Record returned, does not change what the index holds.
func checkReplyNotAliased(e *env) error {
	key, tok, err := e.claimed()
	if err != nil {
		return err
	}
	buf := bytes.Clone(replyA)
	if err := e.bind("", key, tok, idempotency.Binding{Reply: buf}); err != nil {
		return err
	}
	for i := range buf {
		buf[i] = 'x'
	}
	r, err := e.wantHeld("", key, msgA, repliedA)
	if err != nil {
		return fmt.Errorf("after the caller changed the slice it passed to Bind: %w", err)
	}
	for i := range r.Reply {
		r.Reply[i] = 'y'
	}
	if _, err := e.wantHeld("", key, msgA, repliedA); err != nil {
		return fmt.Errorf("after the caller changed the Reply of a returned Record: %w", err)
	}
	_, err = e.wantSame("", key, msgA, repliedA)
	return err
}

// verbatimReplies are replies a re-encoding index would change: whitespace, key order,
// escapes, raw non-ASCII text, a number's spelling, and one longer than 64 KiB.
var verbatimReplies = [][]byte{
	[]byte("{ \"role\" : \"ROLE_AGENT\",\n\t\"messageId\":\"conformance-verbatim\",  \"parts\":[{\"text\":\"caf\u00e9 \\u00e9 \\\"q\\\" <&> \\u2028\"}],\"n\":1.50e+3 }\n"),
	[]byte(`{"parts":[{"text":"` + strings.Repeat("0123456789abcdef", 70000/16) + `"}],"messageId":"conformance-long","role":"ROLE_AGENT"}`),
}

// checkReplyVerbatim: a reply is stored byte for byte, never re-encoded (a JSON column
// would reorder keys and drop whitespace) nor cut (a 64 KiB column would).
func checkReplyVerbatim(e *env) error {
	for _, reply := range verbatimReplies {
		key := e.key()
		b := idempotency.Binding{TaskID: taskA, Reply: reply}
		if _, err := e.ownBound("", key, msgA, b); err != nil {
			return err
		}
		for _, got := range []func() (idempotency.Record, error){
			func() (idempotency.Record, error) { return e.wantHeld("", key, msgA, b) },
			func() (idempotency.Record, error) { return e.wantSame("", key, msgA, b) },
		} {
			if _, err := got(); err != nil {
				return fmt.Errorf("a reply of %d bytes must come back byte for byte (store bytes, not parsed JSON): %w", len(reply), err)
			}
		}
	}
	return nil
}

// checkEmptyReplyBesideTask: a Binding of a task id and an empty Reply binds the task
// alone: Records report a nil Reply, and the task may still gain a reply.
func checkEmptyReplyBesideTask(e *env) error {
	key, tok, err := e.claimed()
	if err != nil {
		return err
	}
	if err := e.bind("", key, tok, idempotency.Binding{TaskID: taskA, Reply: []byte{}}); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("after a Bind of a task id and an empty reply (an empty reply counts as none, and a Record reports it nil): %w", err)
	}
	if err := e.bind("", key, tok, bothA); err != nil {
		return fmt.Errorf("adding a reply to a key bound to a task id and an empty reply: %w", err)
	}
	_, err = e.wantSame("", key, msgA, bothA)
	return err
}

// checkRecordsNotAliased: every Record is the caller's: changing the Reply of one
// returned by Claim changes neither what the index holds nor another Record, and two
// Lookups return two copies.
func checkRecordsNotAliased(e *env) error {
	key := e.key()
	if _, err := e.ownBound("", key, msgA, repliedA); err != nil {
		return err
	}
	scribble := func(r idempotency.Record) {
		for i := range r.Reply {
			r.Reply[i] = 'z'
		}
	}
	r1, err := e.wantSame("", key, msgA, repliedA)
	if err != nil {
		return err
	}
	r2, err := e.wantHeld("", key, msgA, repliedA)
	if err != nil {
		return err
	}
	scribble(r1)
	if !bytes.Equal(r2.Reply, replyA) {
		return fmt.Errorf("changing the Reply of a Record returned by Claim changed the Reply of one returned by Lookup to %q; "+
			"want every Record to have its own copy", r2.Reply)
	}
	if _, err := e.wantHeld("", key, msgA, repliedA); err != nil {
		return fmt.Errorf("after the caller changed the Reply of a Record returned by Claim: %w", err)
	}
	if _, err := e.wantSame("", key, msgA, repliedA); err != nil {
		return fmt.Errorf("after the caller changed the Reply of a Record returned by Claim: %w", err)
	}
	r3, err := e.wantHeld("", key, msgA, repliedA)
	if err != nil {
		return err
	}
	scribble(r3)
	if !bytes.Equal(r2.Reply, replyA) {
		return fmt.Errorf("changing the Reply of one Record returned by Lookup changed another's to %q; want every Record to have its own copy", r2.Reply)
	}
	return nil
}

// rebindOutcome is what the contract says of binding b to a key bound to stored by
// its owner: nil and the key unchanged when b is stored or a part of it (compared
// byte for byte); nil and a reply added when stored is a task id alone and b names
// that task id; otherwise ErrAlreadyBound and the key unchanged. It returns what the
// key is bound to afterwards and the error to want.
func rebindOutcome(stored, b idempotency.Binding) (idempotency.Binding, error) {
	part := (b.TaskID == "" || b.TaskID == stored.TaskID) && (len(b.Reply) == 0 || bytes.Equal(b.Reply, stored.Reply))
	switch {
	case part:
		return stored, nil
	case stored.TaskID != "" && stored.Reply == nil && b.TaskID == stored.TaskID:
		return idempotency.Binding{TaskID: stored.TaskID, Reply: b.Reply}, nil
	}
	return stored, idempotency.ErrAlreadyBound
}

// checkRebindEveryPart: every Binding offered by the owner to a key bound to a task,
// a reply, or both, is judged part by part and byte for byte against what is bound:
// the task id and the reply, each alone and together, the same, another, and a reply
// of the same length that differs in one byte. Only what is bound (or a part of it)
// passes unchanged, and only a task id alone gains a reply; anything else gets
// ErrAlreadyBound and changes nothing.
func checkRebindEveryPart(e *env) error {
	near := bytes.Clone(replyA) // replyA but for one byte
	near[len(near)-3] ^= 0x01
	stored := []idempotency.Binding{boundA, repliedA, bothA}
	offers := []idempotency.Binding{
		boundA, boundB, repliedA, repliedB, {Reply: near}, bothA,
		{TaskID: taskA, Reply: replyB}, {TaskID: taskA, Reply: near}, {TaskID: taskB, Reply: replyA},
	}
	for _, s := range stored {
		for _, b := range offers {
			key := e.key()
			tok, err := e.ownBound("", key, msgA, s)
			if err != nil {
				return err
			}
			after, want := rebindOutcome(s, b)
			err = e.ix.Bind(e.ctx, "", key, tok, b)
			what := fmt.Sprintf("Bind(%s, owner's token, %s) of a key bound to %s", where("", key), describeBinding(b), describeBinding(s))
			switch {
			case want == nil && err != nil:
				return fmt.Errorf("%s = %w; want nil", what, err)
			case want != nil:
				if err := wantErr(what, err, want); err != nil {
					return err
				}
			}
			if _, err := e.wantHeld("", key, msgA, after); err != nil {
				return fmt.Errorf("after %s: %w", what, err)
			}
		}
	}
	return nil
}
