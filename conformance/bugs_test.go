package conformance

import (
	"time"

	"github.com/a2akit/idempotency"
)

// A bug is one slip an index author makes. The map-based reference index (refIndex)
// and the copy of memstore's sharded design (shardIndex) each carry a bug field; the
// slips of the layer that turns the caller's input into storage keys and values are
// made by front, around either. The zero bug is none.
type bug string

// Slips inside an index: each is written, in refIndex and in shardIndex, where that
// index would get it wrong.
const (
	bugNonAtomicClaim               bug = "NonAtomicClaim"               // look up, then insert
	bugReleaseIgnoresToken          bug = "ReleaseIgnoresToken"          // DEL by key
	bugBindIgnoresToken             bug = "BindIgnoresToken"             // UPDATE without the token
	bugForgetsDeletedTasks          bug = "ForgetsDeletedTasks"          // ON DELETE CASCADE
	bugReplayRefreshesClaim         bug = "ReplayRefreshesClaim"         // a retry stamps the claim anew
	bugIgnoresTTL                   bug = "IgnoresTTL"                   // no expiry
	bugLeaksHolder                  bug = "LeaksHolder"                  // the holder's record to another message
	bugTakeoverKeepsToken           bug = "TakeoverKeepsToken"           // no new token on takeover
	bugTakeoverResetsClaimTime      bug = "TakeoverResetsClaimTime"      // claimed_at = now on takeover
	bugTakeoverByOtherMessage       bug = "TakeoverByOtherMessage"       // any message takes over
	bugReleasesBound                bug = "ReleasesBound"                // DELETE without "pending"
	bugSweepsPendingClaims          bug = "SweepsPendingClaims"          // age alone
	bugAliasesReply                 bug = "AliasesReply"                 // keeps the caller's slice
	bugEvictsWhenFull               bug = "EvictsWhenFull"               // LRU eviction
	bugTokensNotUnique              bug = "TokensNotUnique"              // a version counter per key, or per shard
	bugReplyOnlyPending             bug = "ReplyOnlyPending"             // pending = no task id
	bugTTLEndExclusive              bug = "TTLEndExclusive"              // expired when now > claim + TTL
	bugLeaseEndExclusive            bug = "LeaseEndExclusive"            // lease ended when now > lease end
	bugAliasesRecords               bug = "AliasesRecords"               // returns the stored reply
	bugRecordLacksLease             bug = "RecordLacksLease"             // LeaseExpiresAt not read back
	bugNonAtomicCapacity            bug = "NonAtomicCapacity"            // count, then insert
	bugCtxOnlyOnWrites              bug = "CtxOnlyOnWrites"              // ctx checked only before a write
	bugTakeoverBeforeCtx            bug = "TakeoverBeforeCtx"            // ctx checked after the takeover
	bugValidatesOnlyNewKeys         bug = "ValidatesOnlyNewKeys"         // input checked only on the insert path
	bugLeaseWholeSeconds            bug = "LeaseWholeSeconds"            // EXPIRE in whole seconds
	bugEvictsAbandoned              bug = "EvictsAbandoned"              // abandoned claims make room
	bugFullBeforeLookup             bug = "FullBeforeLookup"             // the count checked before the key
	bugExpiredSameMessageHeld       bug = "ExpiredSameMessageHeld"       // the same message ignores the TTL
	bugSameMessageEmptyRecord       bug = "SameMessageEmptyRecord"       // a retry gets no binding
	bugExpiredReclaimKeepsClaimTime bug = "ExpiredReclaimKeepsClaimTime" // upsert keeps claimed_at
	bugReleaseTombstone             bug = "ReleaseTombstone"             // soft delete keeps claimed_at
	bugTakeoverOldLeaseLength       bug = "TakeoverOldLeaseLength"       // the stored lease length reused
	bugTakeoverLeaseFromClaim       bug = "TakeoverLeaseFromClaim"       // lease end = claimed_at + lease
	bugBindIgnoresTTL               bug = "BindIgnoresTTL"               // UPDATE without the TTL
	bugBindNonAtomic                bug = "BindNonAtomic"                // read, judge, write
	bugBindOverwrites               bug = "BindOverwrites"               // no conflict check
	bugRebindFails                  bug = "RebindFails"                  // not idempotent
	bugTaskCannotGainReply          bug = "TaskCannotGainReply"          // bound means final
	bugTornBind                     bug = "TornBind"                     // two writes
	bugStoresEmptyReply             bug = "StoresEmptyReply"             // '' instead of NULL
	bugReleaseNotHeldErr            bug = "ReleaseNotHeldErr"            // "not found" as not owner
	bugReleaseKeepsKey              bug = "ReleaseKeepsKey"              // Release returns nil, frees nothing
	bugReleaseNonAtomic             bug = "ReleaseNonAtomic"             // check the token, then DEL by key
	bugLookupHidesPending           bug = "LookupHidesPending"           // only bound keys found
	bugLookupExtendsLease           bug = "LookupExtendsLease"           // GET then EXPIRE
	bugCapacityMissesEmptyScope     bug = "CapacityMissesEmptyScope"     // "" taken for no scope
	bugReportsNoLimit               bug = "ReportsNoLimit"               // Limit 0 while bounded
	bugSweepLosesReportOnCancel     bug = "SweepLosesReportOnCancel"     // empty report with ctx's error
	bugSweepReportsBatchSize        bug = "SweepReportsBatchSize"        // counts batches times size
	bugSweepsAbandonedYoung         bug = "SweepsAbandonedYoung"         // any abandoned claim is garbage
	bugSweepSnapshot                bug = "SweepSnapshot"                // SELECT, then DELETE by key

	bugStaleTokenAfterLease  bug = "StaleTokenAfterLease"  // Bind: token = ? OR lease ended
	bugTakeoverTokenFromOld  bug = "TakeoverTokenFromOld"  // the old token plus one
	bugZeroTokenAfterLookup  bug = "ZeroTokenAfterLookup"  // not held answered before the token is judged
	bugReplyRebindUnchecked  bug = "ReplyRebindUnchecked"  // a reply alone beside a task: "the same"
	bugReportsNoDefaultLimit bug = "ReportsNoDefaultLimit" // a default bound reported as none
	bugPhantomPlaces         bug = "PhantomPlaces"         // an expired key's place kept on its new claim
	bugSweepCtxOnce          bug = "SweepCtxOnce"          // ctx checked before the first batch only
	bugSweepCollectsFirst    bug = "SweepCollectsFirst"    // every id SELECTed first, then DELETE by id

	bugExtendIgnoresToken    bug = "ExtendIgnoresToken"    // UPDATE without the token
	bugExtendsBound          bug = "ExtendsBound"          // UPDATE without "pending"
	bugExtendIgnoresTTL      bug = "ExtendIgnoresTTL"      // UPDATE without the TTL
	bugExtendRevivesReleased bug = "ExtendRevivesReleased" // soft delete, and Extend clears it
	bugExtendAfterLeaseEnd   bug = "ExtendAfterLeaseEnd"   // UPDATE without "lease running"
	bugExtendEndExclusive    bug = "ExtendEndExclusive"    // lease ended when now > lease end
	bugExtendFromClaim       bug = "ExtendFromClaim"       // lease end = claimed_at + lease
	bugExtendAddsToEnd       bug = "ExtendAddsToEnd"       // lease end += lease
	bugExtendNeverShortens   bug = "ExtendNeverShortens"   // lease end = max(lease end, now + lease)
	bugExtendWholeSeconds    bug = "ExtendWholeSeconds"    // EXPIRE in whole seconds
	bugExtendRefreshesClaim  bug = "ExtendRefreshesClaim"  // claimed_at = now too
	bugExtendCountsAgain     bug = "ExtendCountsAgain"     // the scope's count bumped on Extend
	bugExtendNonAtomic       bug = "ExtendNonAtomic"       // SELECT, judge, UPDATE by key
	bugExtendCtxAfterWrite   bug = "ExtendCtxAfterWrite"   // ctx checked after the UPDATE
	bugExtendLeaseUnchecked  bug = "ExtendLeaseUnchecked"  // a lease <= 0 taken
)

// Slips of the layer in front of the storage, made by front around either index.
const (
	bugIgnoresContext     bug = "IgnoresContext"     // context.Background() everywhere
	bugCtxErrNotWrapped   bug = "CtxErrNotWrapped"   // fmt.Errorf("%v")
	bugLenientInput       bug = "LenientInput"       // makes do with bad input
	bugJoinsScopeAndKey   bug = "JoinsScopeAndKey"   // scope + ":" + key
	bugJoinsKeyFirst      bug = "JoinsKeyFirst"      // key + "_" + scope
	bugScopeIgnored       bug = "ScopeIgnored"       // one keyspace
	bugNormalizesScope    bug = "NormalizesScope"    // lower case, trimmed
	bugSanitizesScope     bug = "SanitizesScope"     // non-alphanumerics to '_'
	bugTruncatesKeys      bug = "TruncatesKeys"      // VARCHAR(128)
	bugFoldsKeyCase       bug = "FoldsKeyCase"       // a case-insensitive collation
	bugTruncatesMessageID bug = "TruncatesMessageID" // VARCHAR(255)
	bugSlotKeyed          bug = "SlotKeyed"          // keyed by the cluster hash slot
	bugCompactsReply      bug = "CompactsReply"      // a JSON column re-encodes
	bugCapsReply          bug = "CapsReply"          // a 64 KiB column
	bugHashKeyed          bug = "HashKeyed"          // keyed by FNV-1a (32-bit) of scope and key
	bugCachesBound        bug = "CachesBound"        // each handle keeps the bound records it read
)

// takeoverLease returns the lease end and length of a takeover at now with lease, of
// a claim made at claimedAt whose lease was leaseLen long.
func (b bug) takeoverLease(now, claimedAt time.Time, leaseLen, lease time.Duration) (time.Time, time.Duration) {
	switch b {
	case bugTakeoverOldLeaseLength:
		return now.Add(leaseLen), leaseLen // the stored lease length reused
	case bugTakeoverLeaseFromClaim:
		return claimedAt.Add(lease), lease // from claimed_at, not from now
	}
	return now.Add(lease), lease
}

// zeroTokenLater is what Bind judges in place of the zero token before it looks the
// key up: 1 (any token) when the bug judges it later, else 0.
func (b bug) zeroTokenLater() idempotency.Token {
	if b == bugZeroTokenAfterLookup {
		return 1
	}
	return 0
}

// extendLease is the lease an Extend with lease writes.
func (b bug) extendLease(lease time.Duration) time.Duration {
	if b == bugExtendWholeSeconds {
		return lease.Truncate(time.Second)
	}
	return lease
}

// extendLeaseEnded reports whether Extend at now finds the lease ending at end over.
func (b bug) extendLeaseEnded(end, now time.Time) bool {
	switch b {
	case bugExtendAfterLeaseEnd:
		return false
	case bugExtendEndExclusive:
		return now.After(end)
	}
	return !now.Before(end)
}

// extendedLease returns the lease end an Extend at now with lease writes, for a claim
// made at claimedAt whose lease ends at end.
func (b bug) extendedLease(now, claimedAt, end time.Time, lease time.Duration) time.Time {
	switch b {
	case bugExtendFromClaim:
		return claimedAt.Add(lease)
	case bugExtendAddsToEnd:
		return end.Add(lease)
	case bugExtendNeverShortens:
		if end.After(now.Add(lease)) {
			return end
		}
	}
	return now.Add(lease)
}
