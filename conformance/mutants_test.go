package conformance

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
)

// A mutant is a bug, the contract sentence it breaks (as named in the package doc's
// "What is proven"), and the checks that must catch it on both designs. mapped, when
// set, builds the map-based index's version of the slip as a wrapper (broken_test.go);
// otherwise refIndex's bug field does.
type mutant struct {
	bug      bug
	sentence string
	caughtBy []string
	mapped   func(*refIndex) idempotency.KeyIndex
}

var mutants = []mutant{
	{bugNonAtomicClaim, "Claim-One", []string{"ExactlyOneWinner", "ExactlyOneWinnerOtherMessages", "ExactlyOneWinnerTwoHandles"},
		wrapped(func(x *refIndex) nonAtomicClaim { return nonAtomicClaim{x} })},
	{bugReleaseIgnoresToken, "Release-Owner", []string{"ReleaseWrongToken", "ReleasedTokenRefused", "LeaseTakeover", "TakeoverFencedAcrossHandles"},
		wrapped(func(x *refIndex) releaseIgnoresToken { return releaseIgnoresToken{x} })},
	{bugForgetsDeletedTasks, "Task-Deleted", []string{"KeySurvivesTaskDeletion"},
		wrapped(func(x *refIndex) forgetsDeletedTasks { return forgetsDeletedTasks{x} })},
	{bugBindIgnoresToken, "Bind-Owner", []string{"BindWrongToken", "ReleasedTokenRefused", "LeaseTakeover", "TakeoverFencedAcrossHandles", "TTLExpiresKey"},
		wrapped(func(x *refIndex) bindIgnoresToken { return bindIgnoresToken{x} })},
	{bugReplayRefreshesClaim, "TTL", []string{"LeaseNotExtendedByReplay", "TTLNotExtendedByReplay"},
		wrapped(func(x *refIndex) replayRefreshesClaim { return replayRefreshesClaim{x} })},
	{bugIgnoresTTL, "TTL", []string{"TTLExpiresKey", "TTLNotExtendedByReplay", "CapacityIgnoresExpired", "TTLBoundary"}, ignoresTTL},
	{bugLeaksHolder, "Claim-Other", []string{"OtherMessageHeld", "ExactlyOneWinnerOtherMessages"},
		wrapped(func(x *refIndex) leaksHolder { return leaksHolder{x} })},
	{bugTakeoverKeepsToken, "Takeover", []string{"LeaseTakeover", "LookupReadOnly", "ExactlyOneTakeover", "TakeoverFencedAcrossHandles"},
		wrapped(func(x *refIndex) takeoverKeepsToken { return takeoverKeepsToken{x} })},
	{bugTakeoverResetsClaimTime, "Takeover-Time", []string{"LeaseTakeover", "TTLNotExtendedByTakeover"},
		wrapped(func(x *refIndex) takeoverResetsClaimTime { return takeoverResetsClaimTime{x} })},
	{bugTakeoverByOtherMessage, "Takeover-Other", []string{"LeaseOtherMessageNoTakeover"},
		wrapped(func(x *refIndex) takeoverByOtherMessage { return takeoverByOtherMessage{x} })},
	{bugReleasesBound, "Bound-Kept", []string{"ReleaseBoundIsNoop", "BoundKeyNeverTakenOver"},
		wrapped(func(x *refIndex) releasesBound { return releasesBound{x} })},
	{bugSweepsPendingClaims, "Sweep-Lease", []string{"SweepKeepsPendingInLease"},
		wrapped(func(x *refIndex) sweepsPendingClaims { return sweepsPendingClaims{x} })},
	{bugAliasesReply, "Aliasing", []string{"ReplyNotAliased"},
		wrapped(func(x *refIndex) aliasesReply { return aliasesReply{x} })},
	{bugEvictsWhenFull, "Full", []string{"CapacityFull"},
		wrapped(func(x *refIndex) evictsWhenFull { return evictsWhenFull{x} })},
	{bugTokensNotUnique, "Token-Unique", []string{"TokensUnique"}, nil},
	{bugReplyOnlyPending, "Bound-Kept", []string{"ReleaseBoundIsNoop", "BoundKeyNeverTakenOver"}, nil},
	{bugTTLEndExclusive, "TTL", []string{"TTLBoundary"}, nil},
	{bugLeaseEndExclusive, "Lease-End", []string{"LeaseBoundary"}, nil},
	{bugAliasesRecords, "Aliasing", []string{"RecordsNotAliased", "ReplyNotAliased"}, nil},
	{bugRecordLacksLease, "Claim-Free", []string{"LookupRecord", "TakeoverLease"}, nil},
	{bugNonAtomicCapacity, "Full", []string{"CapacityConcurrent"}, nil},
	{bugCtxOnlyOnWrites, "Context", []string{"CancelledClaim", "CancelledBind", "CancelledRelease"}, nil},
	{bugTakeoverBeforeCtx, "Context", []string{"CancelledTakeover"}, nil},
	{bugValidatesOnlyNewKeys, "Invalid", []string{"InvalidOnHeldKey"}, nil},
	{bugLeaseWholeSeconds, "Lease-End", []string{"LeaseSubSecond"}, nil},
	{bugEvictsAbandoned, "Full", []string{"CapacityFullAbandoned"}, nil},
	{bugFullBeforeLookup, "Full", []string{"CapacityFull", "CapacityFullAbandoned"}, nil},
	{bugExpiredSameMessageHeld, "Reclaim", []string{"TTLRetrySameMessage"}, nil},
	{bugSameMessageEmptyRecord, "Claim-Same", []string{"RetrySameMessageBoundTask", "RetrySameMessageBoundReply"}, nil},
	{bugExpiredReclaimKeepsClaimTime, "Reclaim", []string{"TTLRetrySameMessage"}, nil},
	{bugReleaseTombstone, "Reclaim", []string{"ReclaimAfterRelease"}, nil},
	{bugTakeoverOldLeaseLength, "Takeover", []string{"TakeoverLease"}, nil},
	{bugTakeoverLeaseFromClaim, "Takeover", []string{"LeaseTakeover", "TakeoverLease"}, nil},
	{bugBindIgnoresTTL, "Bind-Owner", []string{"BindAfterTTL"}, nil},
	{bugBindNonAtomic, "Bind-Change", []string{"ConcurrentBinds", "BindRacingTakeover"}, nil},
	{bugBindOverwrites, "Bind-Change", []string{"BindConflict"}, nil},
	{bugRebindFails, "Bind-Idempotent", []string{"BindIdempotent", "BindTaskThenReply"}, nil},
	{bugTaskCannotGainReply, "Bind-Change", []string{"BindTaskThenReply"}, nil},
	{bugTornBind, "Lookup", []string{"LookupsSeeWholeBindings"}, nil},
	{bugStoresEmptyReply, "Verbatim", []string{"EmptyReplyBesideTask"}, nil},
	{bugReleaseNotHeldErr, "Release-Absent", []string{"ReleaseNotHeld"}, nil},
	{bugReleaseKeepsKey, "Release-Frees", []string{"ReleaseFreesPending"}, nil},
	{bugReleaseNonAtomic, "Release-Frees", []string{"ReleaseRacingTakeover"}, nil},
	{bugLookupHidesPending, "Lookup", []string{"ClaimFreeKey", "LookupRecord"}, nil},
	{bugLookupExtendsLease, "Lookup", []string{"LookupReadOnly"}, nil},
	{bugCapacityMissesEmptyScope, "Capacity", []string{"CapacityCountsClaims"}, nil},
	{bugReportsNoLimit, "Full", []string{"CapacityFull"}, nil},
	{bugSweepLosesReportOnCancel, "Sweep-Report", []string{"SweepCancelledMidway"}, nil},
	{bugSweepReportsBatchSize, "Sweep-Report", []string{"SweepBatches"}, nil},
	{bugSweepsAbandonedYoung, "Sweep-Age", []string{"SweepKeepsYoungKeys"}, nil},
	{bugSweepSnapshot, "Sweep-Age", []string{"SweepRacingClaims"}, nil},

	{bugIgnoresContext, "Context", []string{"CancelledClaim", "CancelledTakeover", "CancelledBind", "CancelledRelease", "CancelledLookup"}, nil},
	{bugCtxErrNotWrapped, "Context", []string{"CancelledClaim", "CancelledBind", "CancelledRelease", "CancelledLookup"}, nil},
	{bugLenientInput, "Invalid", []string{"InvalidKey", "InvalidMessageID", "InvalidLease", "InvalidToken", "InvalidBinding", "InvalidOnHeldKey"}, nil},
	{bugJoinsScopeAndKey, "Scope", []string{"ScopeKeyNoCollision"}, nil},
	{bugJoinsKeyFirst, "Scope", []string{"ScopeKeyNoCollision"}, nil},
	{bugScopeIgnored, "Scope", []string{"ScopeIsolation", "ScopeIdentity"}, nil},
	{bugNormalizesScope, "Identity", []string{"ScopeIdentity"}, nil},
	{bugSanitizesScope, "Identity", []string{"ScopeIdentity"}, nil},
	{bugTruncatesKeys, "Identity", []string{"KeyLengths"}, nil},
	{bugFoldsKeyCase, "Identity", []string{"KeyCase"}, nil},
	{bugTruncatesMessageID, "Identity", []string{"MessageIDIdentity"}, nil},
	{bugSlotKeyed, "Identity", []string{"ManyKeys"}, nil},
	{bugStaleTokenAfterLease, "Bind-Owner", []string{"StaleTokensAfterLeaseEnd"}, nil},
	{bugTakeoverTokenFromOld, "Token-Unique", []string{"TakeoverTokensUnique"}, nil},
	{bugZeroTokenAfterLookup, "Invalid", []string{"InvalidToken"}, nil},
	{bugReplyRebindUnchecked, "Bind-Change", []string{"RebindEveryPart"}, nil},
	{bugReportsNoDefaultLimit, "Capacity", []string{"CapacityFull"}, nil},
	{bugPhantomPlaces, "Full", []string{"CapacityReclaimExpired"}, nil},
	{bugSweepCtxOnce, "Sweep-Report", []string{"SweepCancelledBetweenBatches"}, nil},
	{bugSweepCollectsFirst, "Sweep-Age", []string{"SweepRacingClaims"}, nil},

	{bugExtendIgnoresToken, "Extend-Owner", []string{"ExtendOnlyOwner", "ExtendFencedOut"}, nil},
	{bugExtendsBound, "Extend-Pending", []string{"ExtendOnlyPending", "ExtendFencedOut"}, nil},
	{bugExtendIgnoresTTL, "Extend-Pending", []string{"ExtendOnlyPending"}, nil},
	{bugExtendRevivesReleased, "Extend-Fenced", []string{"ExtendFencedOut"}, nil},
	{bugExtendAfterLeaseEnd, "Extend-Pending", []string{"ExtendAfterLeaseEnd", "ExtendBoundary"}, nil},
	{bugExtendEndExclusive, "Extend-Pending", []string{"ExtendBoundary"}, nil},
	{bugExtendFromClaim, "Extend-Now", []string{"ExtendFromNow"}, nil},
	{bugExtendAddsToEnd, "Extend-Now", []string{"ExtendFromNow"}, nil},
	{bugExtendNeverShortens, "Extend-Now", []string{"ExtendFromNow"}, nil},
	{bugExtendWholeSeconds, "Extend-Now", []string{"ExtendBoundary"}, nil},
	{bugExtendRefreshesClaim, "Extend-Else", []string{"ExtendKeepsClaim"}, nil},
	{bugExtendCountsAgain, "Extend-Else", []string{"ExtendKeepsClaim"}, nil},
	{bugExtendNonAtomic, "Extend-Race", []string{"ExtendRacingTakeover"}, nil},
	{bugExtendCtxAfterWrite, "Context", []string{"CancelledExtend"}, nil},
	{bugExtendLeaseUnchecked, "Invalid", []string{"InvalidLease"}, nil},

	{bugCompactsReply, "Verbatim", []string{"ReplyVerbatim"}, nil},
	{bugCapsReply, "Verbatim", []string{"ReplyVerbatim"}, nil},
	{bugHashKeyed, "Identity", []string{"HashCollisions"}, nil},
	{bugCachesBound, "Handles", []string{"HandlesSeeEachOther"}, nil},
}

// designs are the two bodies every mutant is written on.
var designs = []string{"Map", "Sharded"}

// harness builds the full reference harness around the index of design with m's bug.
func (m mutant) harness(design string) func(t *testing.T) Harness {
	cfg := full
	cfg.design, cfg.bug = design, m.bug
	if m.bug == bugSlotKeyed {
		// Every key lands in one scope: with the usual bound, a Claim would fail with
		// ErrFull before two keys share a slot.
		cfg.limit = 10 * manyKeys
	}
	if m.bug == bugReportsNoDefaultLimit {
		// A default bound larger than the thousand keys every index must take.
		cfg.limit = 20 * unboundedProbe
	}
	if design == "Map" && m.mapped != nil {
		cfg.bug, cfg.wrap = "", m.mapped
	}
	return cfg.harness
}

// TestSuiteKillsEveryMutant runs, on each mutant and each design, the checks that
// must catch it, and fails when one of them passes or skips: a surviving mutant is a
// sentence of the contract the suite does not prove.
func TestSuiteKillsEveryMutant(t *testing.T) {
	for _, m := range mutants {
		for _, design := range designs {
			t.Run(string(m.bug)+"/"+design, func(t *testing.T) {
				for _, name := range m.caughtBy {
					c := checkNamed(t, name)
					err := c.exec(t.Context(), m.harness(design)(t))
					var skip *skipError
					switch {
					case errors.As(err, &skip):
						t.Errorf("%s skipped instead of catching %s on the %s index: %v", name, m.bug, design, err)
					case err == nil:
						t.Errorf("%s passed on the %s index with bug %s; want it caught", name, design, m.bug)
					default:
						t.Logf("caught by %s: %v", name, err)
					}
				}
			})
		}
	}
}

// TestMutantsCoverEverySentence: every contract sentence the package doc lists under
// "What is proven" has a mutant, every mutant names a listed sentence, and every
// check a mutant names exists.
func TestMutantsCoverEverySentence(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	proven := string(doc[bytes.Index(doc, []byte("# What is proven")):])
	listed := regexp.MustCompile(`(?m)^//   - ([A-Z][A-Za-z]*(?:-[A-Z][A-Za-z]*)?):`).FindAllStringSubmatch(proven, -1)
	sentences := make(map[string]bool)
	for _, l := range listed {
		sentences[l[1]] = true
	}
	if len(sentences) < 25 {
		t.Fatalf("found %d sentences under \"What is proven\" in doc.go; the list format changed?", len(sentences))
	}
	killed := make(map[string]int)
	seen := make(map[bug]bool)
	for _, m := range mutants {
		if seen[m.bug] {
			t.Errorf("mutant %s listed twice", m.bug)
		}
		seen[m.bug] = true
		if !sentences[m.sentence] {
			t.Errorf("mutant %s breaks sentence %q, which doc.go does not list", m.bug, m.sentence)
		}
		killed[m.sentence]++
		for _, name := range m.caughtBy {
			checkNamed(t, name)
			if !strings.Contains(proven, name) {
				t.Errorf("check %s, which catches %s, is not named under \"What is proven\" in doc.go", name, m.bug)
			}
		}
	}
	for s := range sentences {
		if killed[s] == 0 {
			t.Errorf("sentence %s has no mutant: nothing shows that the suite proves it", s)
		}
	}
	t.Logf("%d mutants on %d designs (%d broken indexes) over %d sentences", len(mutants), len(designs), len(mutants)*len(designs), len(sentences))
}
