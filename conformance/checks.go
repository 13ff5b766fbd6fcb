package conformance

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
)

// checks is the suite, in the order Run runs it. Names are stable: store authors
// select and skip checks by name.
var checks = []check{
	// Claim, retry, conflict, lookup.
	{"ClaimFreeKey", 0, checkClaimFreeKey},
	{"RetrySameMessagePending", 0, checkRetrySameMessagePending},
	{"RetrySameMessageBoundTask", 0, checkRetrySameMessageBoundTask},
	{"RetrySameMessageBoundReply", 0, checkRetrySameMessageBoundReply},
	{"OtherMessageHeld", 0, checkOtherMessageHeld},
	{"LookupAbsent", 0, checkLookupAbsent},
	{"LookupRecord", 0, checkLookupRecord},
	{"LookupReadOnly", 0, checkLookupReadOnly},

	// Release.
	{"ReleaseFreesPending", 0, checkReleaseFreesPending},
	{"ReleaseWrongToken", 0, checkReleaseWrongToken},
	{"ReleaseBoundIsNoop", 0, checkReleaseBoundIsNoop},
	{"ReleaseNotHeld", 0, checkReleaseNotHeld},
	{"ReleasedTokenRefused", 0, checkReleasedTokenRefused},
	{"TokensUnique", 0, checkTokensUnique},

	// Bind.
	{"BindWrongToken", 0, checkBindWrongToken},
	{"BindIdempotent", 0, checkBindIdempotent},
	{"BindConflict", 0, checkBindConflict},
	{"BindTaskThenReply", 0, checkBindTaskThenReply},
	{"BindNotHeld", 0, checkBindNotHeld},
	{"ReplyNotAliased", 0, checkReplyNotAliased},
	{"RecordsNotAliased", 0, checkRecordsNotAliased},
	{"ReplyVerbatim", 0, checkReplyVerbatim},
	{"EmptyReplyBesideTask", 0, checkEmptyReplyBesideTask},

	// Leases.
	{"LeaseHeldBeforeEnd", 0, checkLeaseHeldBeforeEnd},
	{"LeaseTakeover", 0, checkLeaseTakeover},
	{"LeaseOtherMessageNoTakeover", 0, checkLeaseOtherMessageNoTakeover},
	{"LateBindWithoutTakeover", 0, checkLateBindWithoutTakeover},
	{"BoundKeyNeverTakenOver", 0, checkBoundKeyNeverTakenOver},
	{"LeaseNotExtendedByReplay", 0, checkLeaseNotExtendedByReplay},
	{"TakeoverLease", 0, checkTakeoverLease},
	{"LeaseBoundary", needClock, checkLeaseBoundary},
	{"LeaseSubSecond", needClock, checkLeaseSubSecond},

	// Time to live.
	{"TTLExpiresKey", needTTL, checkTTLExpiresKey},
	{"TTLNotExtendedByReplay", needTTL, checkTTLNotExtendedByReplay},
	{"TTLNotExtendedByTakeover", needTTL, checkTTLNotExtendedByTakeover},
	{"TTLBoundary", needTTL, checkTTLBoundary},
	{"TTLRetrySameMessage", needTTL, checkTTLRetrySameMessage},
	{"ReclaimAfterRelease", needTTL, checkReclaimAfterRelease},
	{"BindAfterTTL", needTTL, checkBindAfterTTL},

	// Concurrency.
	{"ExactlyOneWinner", 0, checkExactlyOneWinner},
	{"ExactlyOneWinnerOtherMessages", 0, checkExactlyOneWinnerOtherMessages},
	{"ExactlyOneTakeover", 0, checkExactlyOneTakeover},
	{"ExactlyOneWinnerTwoHandles", needHandles, checkExactlyOneWinnerTwoHandles},
	{"TakeoverFencedAcrossHandles", needHandles, checkTakeoverFencedAcrossHandles},
	{"ConcurrentBinds", 0, checkConcurrentBinds},
	{"BindRacingTakeover", 0, checkBindRacingTakeover},
	{"ReleaseRacingTakeover", 0, checkReleaseRacingTakeover},
	{"LookupsSeeWholeBindings", 0, checkLookupsSeeWholeBindings},

	// Identity.
	{"KeyLengths", 0, checkKeyLengths},
	{"KeyCase", 0, checkKeyCase},
	{"MessageIDIdentity", 0, checkMessageIDIdentity},
	{"ScopeIdentity", 0, checkScopeIdentity},
	{"ManyKeys", 0, checkManyKeys},

	// Scopes and tasks.
	{"ScopeIsolation", 0, checkScopeIsolation},
	{"ScopeKeyNoCollision", 0, checkScopeKeyNoCollision},
	{"KeySurvivesTaskDeletion", needTasks, checkKeySurvivesTaskDeletion},

	// Contexts.
	{"CancelledClaim", 0, checkCancelledClaim},
	{"CancelledTakeover", 0, checkCancelledTakeover},
	{"CancelledBind", 0, checkCancelledBind},
	{"CancelledRelease", 0, checkCancelledRelease},
	{"CancelledLookup", 0, checkCancelledLookup},

	// Invalid input.
	{"InvalidKey", 0, checkInvalidKey},
	{"InvalidMessageID", 0, checkInvalidMessageID},
	{"InvalidLease", 0, checkInvalidLease},
	{"InvalidToken", 0, checkInvalidToken},
	{"InvalidBinding", 0, checkInvalidBinding},
	{"InvalidOnHeldKey", 0, checkInvalidOnHeldKey},

	// Optional interfaces.
	{"HonoursKeys", 0, checkHonoursKeys},
	{"CapacityCountsClaims", 0, checkCapacityCountsClaims},
	{"CapacityFull", 0, checkCapacityFull},
	{"CapacityIgnoresExpired", needTTL, checkCapacityIgnoresExpired},
	{"CapacityFullAbandoned", 0, checkCapacityFullAbandoned},
	{"CapacityConcurrent", 0, checkCapacityConcurrent},
	{"SweepDeletesOldKeys", 0, checkSweepDeletesOldKeys},
	{"SweepKeepsPendingInLease", 0, checkSweepKeepsPendingInLease},
	{"SweepPolicyAge", 0, checkSweepPolicyAge},
	{"SweepBatches", 0, checkSweepBatches},
	{"SweepCancelled", 0, checkSweepCancelled},
	{"SweepCancelledMidway", 0, checkSweepCancelledMidway},
	{"SweepKeepsYoungKeys", 0, checkSweepKeepsYoungKeys},
	{"SweepRacingClaims", needTTL, checkSweepRacingClaims},
}

// checkClaimFreeKey: a key never claimed is Claimed with a non-zero token, and the
// claim is then visible, pending, to Lookup.
func checkClaimFreeKey(e *env) error {
	key := e.key()
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return err
	}
	_, err := e.wantHeld("", key, msgA, pending)
	return err
}

// checkRetrySameMessagePending: a retry of the same message while the first attempt
// has bound nothing gets HeldBySameMessage with a pending Record.
func checkRetrySameMessagePending(e *env) error {
	key := e.key()
	if _, err := e.own("", key, msgA, longLease); err != nil {
		return err
	}
	for range 2 {
		if _, err := e.wantSame("", key, msgA, pending); err != nil {
			return err
		}
	}
	return nil
}

// checkRetrySameMessageBoundTask: after Bind to a task, a retry of the same message
// gets the task id.
func checkRetrySameMessageBoundTask(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if _, err := e.wantSame("", key, msgA, pending); err != nil {
		return err
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return err
	}
	_, err = e.wantSame("", key, msgA, boundA)
	return err
}

// checkRetrySameMessageBoundReply: after Bind to a Message reply, a retry of the same
// message gets the reply's bytes, verbatim.
func checkRetrySameMessageBoundReply(e *env) error {
	key := e.key()
	if _, err := e.ownBound("", key, msgA, repliedA); err != nil {
		return err
	}
	_, err := e.wantSame("", key, msgA, repliedA)
	return err
}

// checkOtherMessageHeld: a different message gets HeldByOtherMessage with an empty
// Record and no token, whether the key is pending or bound, and its Claim changes
// nothing.
func checkOtherMessageHeld(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.wantOther("", key, msgB); err != nil {
		return fmt.Errorf("pending key: %w", err)
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return err
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return err
	}
	if err := e.wantOther("", key, msgB); err != nil {
		return fmt.Errorf("bound key: %w", err)
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
}

// checkLookupAbsent: a key never claimed is absent, without error.
func checkLookupAbsent(e *env) error {
	return e.wantAbsent("", e.key())
}

// checkLookupRecord: Lookup returns the claiming message, a claim time, a lease end
// after it while pending, and then the binding, with the claim time unchanged. A
// Claim by the same message returns the same Record.
func checkLookupRecord(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	r1, err := e.wantHeld("", key, msgA, pending)
	if err != nil {
		return err
	}
	if r1.ClaimedAt.IsZero() {
		return fmt.Errorf("Lookup(%s) = %s; want ClaimedAt set", where("", key), describeRecord(r1))
	}
	if !r1.LeaseExpiresAt.After(r1.ClaimedAt) {
		return fmt.Errorf("Lookup(%s) of a pending claim = %s; want LeaseExpiresAt after ClaimedAt",
			where("", key), describeRecord(r1))
	}
	c, err := e.wantSame("", key, msgA, pending)
	if err != nil {
		return err
	}
	if !c.ClaimedAt.Equal(r1.ClaimedAt) {
		return fmt.Errorf("Claim by the holding message reports ClaimedAt %v, Lookup %v; want the same", c.ClaimedAt, r1.ClaimedAt)
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return err
	}
	r2, err := e.wantHeld("", key, msgA, boundA)
	if err != nil {
		return err
	}
	if !r2.ClaimedAt.Equal(r1.ClaimedAt) {
		return fmt.Errorf("ClaimedAt changed on Bind from %v to %v; want the time of the first claim", r1.ClaimedAt, r2.ClaimedAt)
	}
	return nil
}

// checkLookupReadOnly: Lookup of an absent key does not create it, and Lookup of a
// pending claim neither extends its lease nor disturbs its owner.
func checkLookupReadOnly(e *env) error {
	absent := e.key()
	for range 2 {
		if err := e.wantAbsent("", absent); err != nil {
			return err
		}
	}
	if _, err := e.own("", absent, msgB, longLease); err != nil {
		return fmt.Errorf("after Lookup of an absent key: %w", err)
	}

	key, lease := e.key(), e.lease()
	start := time.Now()
	tok, err := e.own("", key, msgA, lease)
	if err != nil {
		return err
	}
	tl := e.since(start)
	tl.to(lease - e.margin())
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return err
	}
	tl.to(lease + e.margin())
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return err
	}
	tok2, err := e.own("", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("after the lease ended (Lookups must not extend it): %w", err)
	}
	if tok2 == tok {
		return fmt.Errorf("takeover returned the old token %d; want a new one", tok)
	}
	return nil
}

// checkReleaseFreesPending: Release by the owner frees a pending claim: the key is
// absent, and another message can claim it, with a different token.
func checkReleaseFreesPending(e *env) error {
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.release("", key, tok); err != nil {
		return err
	}
	if err := e.wantAbsent("", key); err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	tok2, err := e.own("", key, msgB, longLease)
	if err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	if tok2 == tok {
		return fmt.Errorf("a claim after Release got the released token %d; want a new one", tok)
	}
	return nil
}

// refusesWrongTokens claims a fresh key as msgA, and wants op (the call called name)
// under a token that does not own the claim, a real token of another claim and one
// never issued, to return ErrNotOwner and leave the claim pending. The owner then
// binds the key to boundA. It returns the key, the owner's token and the other
// claim's token.
func (e *env) refusesWrongTokens(name string, op func(key string, wrong idempotency.Token) error) (key string, tok, other idempotency.Token, err error) {
	key = e.key()
	if tok, err = e.own("", key, msgA, longLease); err != nil {
		return "", 0, 0, err
	}
	if other, err = e.own("", e.key(), msgA, longLease); err != nil {
		return "", 0, 0, err
	}
	for _, wrong := range []idempotency.Token{other, tok ^ 0x5a5a5a5a5a5a} {
		if wrong == tok || wrong == 0 {
			continue
		}
		err := op(key, wrong)
		if err := wantErr(fmt.Sprintf("%s(%s, token %d) of a claim owned by token %d", name, where("", key), wrong, tok),
			err, idempotency.ErrNotOwner); err != nil {
			return "", 0, 0, err
		}
		if _, err := e.wantHeld("", key, msgA, pending); err != nil {
			return "", 0, 0, fmt.Errorf("after %s with a wrong token: %w", name, err)
		}
	}
	if err := e.bind("", key, tok, boundA); err != nil {
		return "", 0, 0, fmt.Errorf("after %s with a wrong token: %w", name, err)
	}
	return key, tok, other, nil
}

// checkReleaseWrongToken: Release under a token that does not own the claim (a real
// token of another claim, or one never issued) returns ErrNotOwner and changes nothing,
// whether the key is pending or bound.
func checkReleaseWrongToken(e *env) error {
	key, tok, other, err := e.refusesWrongTokens("Release", func(key string, wrong idempotency.Token) error {
		return e.ix.Release(e.ctx, "", key, wrong)
	})
	if err != nil {
		return err
	}
	// Bound, the key still refuses a token that does not own it: the token is
	// checked first.
	err = e.ix.Release(e.ctx, "", key, other)
	if err := wantErr(fmt.Sprintf("Release(%s, token %d) of a key bound under token %d", where("", key), other, tok),
		err, idempotency.ErrNotOwner); err != nil {
		return err
	}
	_, err = e.wantHeld("", key, msgA, boundA)
	return err
}

// checkReleaseBoundIsNoop: Release of a bound key (to a task, or to a reply alone) by
// its owner returns nil and changes nothing: the key stays bound, replays still see
// the binding, another message is still refused.
func checkReleaseBoundIsNoop(e *env) error {
	for _, b := range []idempotency.Binding{boundA, repliedA} {
		key := e.key()
		tok, err := e.ownBound("", key, msgA, b)
		if err != nil {
			return err
		}
		if err := e.release("", key, tok); err != nil {
			return fmt.Errorf("of a key bound to %s: %w", describeBinding(b), err)
		}
		if _, err := e.wantHeld("", key, msgA, b); err != nil {
			return fmt.Errorf("after Release of a key bound to %s: %w", describeBinding(b), err)
		}
		if _, err := e.wantSame("", key, msgA, b); err != nil {
			return fmt.Errorf("after Release of a key bound to %s: %w", describeBinding(b), err)
		}
		if err := e.wantOther("", key, msgB); err != nil {
			return err
		}
	}
	return nil
}

// checkReleaseNotHeld: releasing a key never claimed, or already released, returns
// nil and leaves it absent.
func checkReleaseNotHeld(e *env) error {
	never := e.key()
	if err := e.ix.Release(e.ctx, "", never, 1); err != nil {
		return fmt.Errorf("Release(%s) of a key never claimed = %w; want nil", where("", never), err)
	}
	if err := e.wantAbsent("", never); err != nil {
		return err
	}
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	for i := range 2 {
		if err := e.ix.Release(e.ctx, "", key, tok); err != nil {
			return fmt.Errorf("Release #%d of a claim (%s) = %w; want nil", i+1, where("", key), err)
		}
	}
	return e.wantAbsent("", key)
}

// checkReleasedTokenRefused: after a release and a new claim by the same message, the
// old token no longer owns the key: Bind and Release with it return ErrNotOwner and
// change nothing.
func checkReleasedTokenRefused(e *env) error {
	key := e.key()
	old, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.release("", key, old); err != nil {
		return err
	}
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return fmt.Errorf("after Release: %w", err)
	}
	if tok == old {
		return fmt.Errorf("a claim after Release got the released token %d; want a new one", tok)
	}
	if err := e.wantFenced(key, old, "the released token"); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, pending); err != nil {
		return fmt.Errorf("after Bind and Release with the released token: %w", err)
	}
	return e.bind("", key, tok, boundA)
}

// checkTokensUnique: tokens are unique across keys and across claims of one key.
func checkTokensUnique(e *env) error {
	seen := make(map[idempotency.Token]string)
	note := func(tok idempotency.Token, what string) error {
		if prev, dup := seen[tok]; dup {
			return fmt.Errorf("token %d issued twice: for %s and for %s", tok, prev, what)
		}
		seen[tok] = what
		return nil
	}
	for i := range 20 {
		key := e.key()
		for round := range 3 {
			tok, err := e.own("", key, msgA, longLease)
			if err != nil {
				return err
			}
			if err := note(tok, fmt.Sprintf("claim %d of key %d", round+1, i)); err != nil {
				return err
			}
			if err := e.release("", key, tok); err != nil {
				return err
			}
		}
	}
	return nil
}

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
	for _, b := range []idempotency.Binding{boundA, repliedA, {TaskID: taskA, Reply: replyA}} {
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
		{repliedA, idempotency.Binding{TaskID: taskA, Reply: replyA}},
		{idempotency.Binding{TaskID: taskA, Reply: replyA}, idempotency.Binding{TaskID: taskA, Reply: replyB}},
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
	both := idempotency.Binding{TaskID: taskA, Reply: replyA}
	if err := e.bind("", key, tok, both); err != nil {
		return fmt.Errorf("adding a reply to a key bound to the same task id: %w", err)
	}
	if _, err := e.wantSame("", key, msgA, both); err != nil {
		return err
	}
	if err := e.bind("", key, tok, both); err != nil {
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
		what := fmt.Sprintf("Bind(%s, owner's token, %s) of a key bound to %s", where("", key), describeBinding(b), describeBinding(both))
		if err := wantErr(what, err, idempotency.ErrAlreadyBound); err != nil {
			return err
		}
	}
	_, err = e.wantHeld("", key, msgA, both)
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
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.release("", key, tok); err != nil {
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
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
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
	key := e.key()
	tok, err := e.own("", key, msgA, longLease)
	if err != nil {
		return err
	}
	if err := e.bind("", key, tok, idempotency.Binding{TaskID: taskA, Reply: []byte{}}); err != nil {
		return err
	}
	if _, err := e.wantHeld("", key, msgA, boundA); err != nil {
		return fmt.Errorf("after a Bind of a task id and an empty reply (an empty reply counts as none, and a Record reports it nil): %w", err)
	}
	both := idempotency.Binding{TaskID: taskA, Reply: replyA}
	if err := e.bind("", key, tok, both); err != nil {
		return fmt.Errorf("adding a reply to a key bound to a task id and an empty reply: %w", err)
	}
	_, err = e.wantSame("", key, msgA, both)
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
