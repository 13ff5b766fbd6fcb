package conformance

import (
	"fmt"
	"time"
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
	{"TakeoverTokensUnique", 0, checkTakeoverTokensUnique},
	{"StaleTokensAfterLeaseEnd", 0, checkStaleTokensAfterLeaseEnd},

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
	{"RebindEveryPart", 0, checkRebindEveryPart},

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

	// Lease extension.
	{"ExtendOnlyOwner", 0, checkExtendOnlyOwner},
	{"ExtendOnlyPending", 0, checkExtendOnlyPending},
	{"ExtendFencedOut", 0, checkExtendFencedOut},
	{"ExtendAfterLeaseEnd", 0, checkExtendAfterLeaseEnd},
	{"ExtendFromNow", 0, checkExtendFromNow},
	{"ExtendBoundary", needClock, checkExtendBoundary},
	{"ExtendKeepsClaim", 0, checkExtendKeepsClaim},
	{"ExtendRacingTakeover", 0, checkExtendRacingTakeover},

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
	{"HandlesSeeEachOther", needHandles, checkHandlesSeeEachOther},

	// Identity.
	{"KeyLengths", 0, checkKeyLengths},
	{"KeyCase", 0, checkKeyCase},
	{"MessageIDIdentity", 0, checkMessageIDIdentity},
	{"ScopeIdentity", 0, checkScopeIdentity},
	{"ManyKeys", 0, checkManyKeys},
	{"HashCollisions", 0, checkHashCollisions},

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
	{"CancelledExtend", 0, checkCancelledExtend},

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
	{"CapacityReclaimExpired", needTTL, checkCapacityReclaimExpired},
	{"SweepDeletesOldKeys", 0, checkSweepDeletesOldKeys},
	{"SweepKeepsPendingInLease", 0, checkSweepKeepsPendingInLease},
	{"SweepPolicyAge", 0, checkSweepPolicyAge},
	{"SweepBatches", 0, checkSweepBatches},
	{"SweepCancelled", 0, checkSweepCancelled},
	{"SweepCancelledMidway", 0, checkSweepCancelledMidway},
	{"SweepCancelledBetweenBatches", 0, checkSweepCancelledBetweenBatches},
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
	key, tok, err := e.claimed()
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
	key, tok, err := e.claimed()
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
	key, tok, r1, err := e.claimedRecord()
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
