package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"regexp"
	"strings"
	"testing"
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

var frontBugs = map[bug]bool{
	bugIgnoresContext: true, bugCtxErrNotWrapped: true, bugLenientInput: true, bugJoinsScopeAndKey: true,
	bugJoinsKeyFirst: true, bugScopeIgnored: true, bugNormalizesScope: true, bugSanitizesScope: true,
	bugTruncatesKeys: true, bugFoldsKeyCase: true, bugTruncatesMessageID: true, bugSlotKeyed: true,
	bugCompactsReply: true, bugCapsReply: true,
}

// front is the layer between an index's methods and its storage, with one slip.
type front struct {
	ix  idempotency.KeyIndex
	bug bug
}

func (f front) id(scope, key string) (string, string) {
	switch f.bug {
	case bugJoinsScopeAndKey:
		if scope == "" {
			return "", key
		}
		return "", scope + ":" + key
	case bugJoinsKeyFirst:
		return "", key + "_" + scope
	case bugScopeIgnored:
		return "", key
	case bugNormalizesScope:
		return strings.ToLower(strings.TrimSpace(scope)), key
	case bugSanitizesScope:
		return strings.Map(func(r rune) rune {
			if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return r
			}
			return '_'
		}, scope), key
	case bugTruncatesKeys:
		return scope, key[:min(len(key), 128)]
	case bugFoldsKeyCase:
		return scope, strings.ToLower(key)
	case bugSlotKeyed:
		if idempotency.ValidateKey(key) != nil {
			return scope, key
		}
		return "", fmt.Sprintf("slot-%05d-padding", crc32.ChecksumIEEE([]byte(scope+"\x00"+key))%16384)
	case bugLenientInput:
		if idempotency.ValidateKey(key) == nil {
			return scope, key
		}
		sum := sha256.Sum256([]byte(key))
		return scope, hex.EncodeToString(sum[:])
	}
	return scope, key
}

func (f front) ctx(ctx context.Context) context.Context {
	if f.bug == bugIgnoresContext {
		return context.Background()
	}
	return ctx
}

func (f front) err(ctx context.Context, err error) error {
	if f.bug == bugCtxErrNotWrapped && err != nil && ctx.Err() != nil {
		return fmt.Errorf("store: %v", err)
	}
	return err
}

func (f front) Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (idempotency.Claim, error) {
	switch {
	case f.bug == bugTruncatesMessageID:
		messageID = messageID[:min(len(messageID), 255)]
	case f.bug == bugLenientInput && lease <= 0:
		lease = time.Minute
	case f.bug == bugLenientInput && messageID == "":
		messageID = "anonymous"
	}
	s, k := f.id(scope, key)
	c, err := f.ix.Claim(f.ctx(ctx), s, k, messageID, lease)
	return c, f.err(ctx, err)
}

func (f front) Bind(ctx context.Context, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	switch {
	case f.bug == bugLenientInput && token == 0:
		return fmt.Errorf("lenient: %w", idempotency.ErrNotOwner)
	case f.bug == bugLenientInput && b.TaskID == "" && len(b.Reply) == 0:
		return nil
	case f.bug == bugCompactsReply && len(b.Reply) > 0:
		var buf bytes.Buffer
		if json.Compact(&buf, b.Reply) == nil {
			b.Reply = buf.Bytes()
		}
	case f.bug == bugCapsReply:
		b.Reply = b.Reply[:min(len(b.Reply), 65535)]
	}
	s, k := f.id(scope, key)
	return f.err(ctx, f.ix.Bind(f.ctx(ctx), s, k, token, b))
}

func (f front) Release(ctx context.Context, scope, key string, token idempotency.Token) error {
	if f.bug == bugLenientInput && token == 0 {
		return nil
	}
	s, k := f.id(scope, key)
	return f.err(ctx, f.ix.Release(f.ctx(ctx), s, k, token))
}

func (f front) Extend(ctx context.Context, scope, key string, token idempotency.Token, lease time.Duration) error {
	s, k := f.id(scope, key)
	return f.err(ctx, f.ix.Extend(f.ctx(ctx), s, k, token, lease))
}

func (f front) Lookup(ctx context.Context, scope, key string) (idempotency.Record, bool, error) {
	s, k := f.id(scope, key)
	r, ok, err := f.ix.Lookup(f.ctx(ctx), s, k)
	return r, ok, f.err(ctx, err)
}

func (f front) HonoursKeys(ctx context.Context) bool {
	return f.ix.(idempotency.Honouring).HonoursKeys(ctx)
}

func (f front) Capacity(ctx context.Context, scope string) (idempotency.Capacity, error) {
	s, _ := f.id(scope, "")
	return f.ix.(idempotency.CapacityReporter).Capacity(ctx, s)
}

func (f front) PurgeExpired(ctx context.Context, p idempotency.RetentionPolicy) (idempotency.PurgeReport, error) {
	r, err := f.ix.(idempotency.Sweeper).PurgeExpired(f.ctx(ctx), p)
	return r, f.err(ctx, err)
}

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
	{bugCompactsReply, "Verbatim", []string{"ReplyVerbatim"}, nil},
	{bugCapsReply, "Verbatim", []string{"ReplyVerbatim"}, nil},
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
