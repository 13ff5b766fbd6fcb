// Package conformance is a test suite for implementations of
// [idempotency.KeyIndex]. Authors of custom indexes run it to show that their claims
// are atomic, fenced and kept when their task is deleted, which is what the kit's
// exactly-once promise rests on.
//
// A store's whole conformance test is one call:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) idempotency.KeyIndex {
//			ix := mystore.Open(...)
//			t.Cleanup(func() { ix.Close() })
//			return ix
//		})
//	}
//
// [Run] checks what any index must do on the real clock. An author who can offer more
// calls [RunHarness] with a [Harness]: a controllable clock (exact lease and
// time-to-live checks), a second handle on the same storage (exactly one winner across
// connection pools, as across processes) and task creation and deletion in the task
// store served next to the index (a key survives the deletion of its task):
//
//	func TestConformance(t *testing.T) {
//		conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
//			dsn := freshTestDatabase(t) // a new schema, dropped by its own t.Cleanup
//			clock := conformance.NewClock(time.Now())
//			open := func() *mystore.Store {
//				s := mystore.New(openPool(t, dsn), mystore.Options{Now: clock.Now, TTL: 24 * time.Hour})
//				t.Cleanup(func() { s.Close() })
//				return s
//			}
//			ix := open()
//			return conformance.Harness{
//				Index:      ix,
//				Advance:    clock.Advance,
//				TTL:        24 * time.Hour,
//				OpenHandle: func() (idempotency.KeyIndex, error) { return open(), nil },
//				CreateTask: func(ctx context.Context) (string, error) { return createTask(ctx, dsn) },
//				DeleteTask: func(ctx context.Context, id string) error { return deleteTask(ctx, dsn, id) },
//			}
//		})
//	}
//
// Every check is its own subtest with a stable name, so that one can be rerun with
// go test -run 'TestConformance/LeaseTakeover'. A check that needs a capability the
// harness does not offer is skipped with a message that names it, and so is a check
// of an optional interface the index does not implement.
//
// # Checks
//
// Claims, retries and lookups:
//
//   - ClaimFreeKey: a free key is Claimed with a non-zero token, and Lookup sees it pending.
//   - RetrySameMessagePending: a retry of the same message gets HeldBySameMessage, pending.
//   - RetrySameMessageBoundTask: after Bind to a task, a retry gets the task id.
//   - RetrySameMessageBoundReply: after Bind to a reply, a retry gets its bytes.
//   - OtherMessageHeld: another message gets HeldByOtherMessage, an empty Record and no token.
//   - LookupAbsent: a key never claimed is absent, without error.
//   - LookupRecord: Lookup reports the message, the claim time and the lease end, then the binding.
//   - LookupReadOnly: Lookup creates nothing and does not extend a lease.
//
// Release, tokens and Bind:
//
//   - ReleaseFreesPending: the owner's Release frees the key for any message, with a new token.
//   - ReleaseWrongToken: a wrong token gets ErrNotOwner and changes nothing.
//   - ReleaseBoundIsNoop: Release of a key bound to a task or to a reply alone returns nil and keeps it bound.
//   - ReleaseNotHeld: releasing a key not held returns nil.
//   - ReleasedTokenRefused: a released claim's token no longer binds nor releases.
//   - TokensUnique: tokens are unique across keys and across claims of one key.
//   - TakeoverTokensUnique: a takeover's token is drawn like a new claim's: over claims,
//     takeovers, releases and claims again, no token is issued twice, and old ones are fenced out.
//   - StaleTokensAfterLeaseEnd: once a lease ended, nobody having taken over, only the owner's
//     token binds, releases or extends; a released claim's token, a neighbour's, the owner's ± 1 do not.
//   - BindWrongToken: only the owner binds; others get ErrNotOwner.
//   - BindIdempotent: binding the same value again succeeds.
//   - BindConflict: binding another value gets ErrAlreadyBound.
//   - BindTaskThenReply: a task id may gain a reply with the same task id, nothing else;
//     rebinding either part alone afterwards is a no-op.
//   - BindNotHeld: Bind of a key not held gets ErrNotOwner.
//   - ReplyNotAliased: the index keeps its own copy of a reply, and a Lookup's Record is the caller's.
//   - RecordsNotAliased: a Claim's Record is the caller's too, and no two Records share a Reply.
//   - ReplyVerbatim: replies come back byte for byte: whitespace, key order, escapes, 70 KB.
//   - EmptyReplyBesideTask: a task id with an empty reply binds the task alone, which may gain a reply.
//   - RebindEveryPart: every Binding offered to a key bound to a task, a reply or both is judged
//     part by part and byte for byte: only what is bound passes, only a task id gains a reply.
//
// Leases (on the controllable clock when offered, else on the real clock):
//
//   - LeaseHeldBeforeEnd: before the lease ends, a retry does not take over.
//   - LeaseTakeover: after it, a retry takes over with a new token, a full lease and the
//     original claim time, and the old token is fenced out.
//   - LeaseOtherMessageNoTakeover: another message never takes over.
//   - LateBindWithoutTakeover: an owner whose lease ended, nobody having taken over, still binds.
//   - BoundKeyNeverTakenOver: a key bound to a task or a reply is kept past its lease.
//   - LeaseNotExtendedByReplay: a retry does not extend the lease.
//   - TakeoverLease: a takeover's lease is its own Claim's, from the takeover, and LeaseExpiresAt says so.
//   - LeaseBoundary: the lease ends at exactly claim time plus lease (needs Harness.Advance).
//   - LeaseSubSecond: a lease of 400ms is not cut to whole seconds (needs Harness.Advance).
//
// Lease extension ([idempotency.KeyIndex.Extend]):
//
//   - ExtendOnlyOwner: only the owner's token extends; others get ErrNotOwner and change no lease.
//   - ExtendOnlyPending: a bound key, a key never claimed, and (with the TTL) a key past its TTL
//     are not extended, nor created nor revived.
//   - ExtendFencedOut: after a takeover (across handles), a release or a bind, the old token
//     no longer extends.
//   - ExtendAfterLeaseEnd: once the lease ended, nobody having taken over, the owner cannot
//     extend it either, and a retry takes it over.
//   - ExtendFromNow: the extended lease runs from now, not from the claim nor from the lease's
//     end, may be shorter than before, and LeaseExpiresAt reports it.
//   - ExtendBoundary: the extended lease ends at exactly the extension plus its lease, where
//     Extend is refused and a retry takes over; 400ms is not cut to whole seconds (needs
//     Harness.Advance).
//   - ExtendKeepsClaim: Extend changes nothing else: claim time, TTL, token, the scope's count;
//     it works in a full scope.
//   - ExtendRacingTakeover: an Extend and retries racing at the lease's end, over many claims and
//     two handles: the extension or a takeover wins, never both.
//
// Time to live (needs Harness.Advance and Harness.TTL):
//
//   - TTLExpiresKey: a key is held until its TTL and absent after it.
//   - TTLNotExtendedByReplay: the TTL runs from the first claim, whatever the retries.
//   - TTLNotExtendedByTakeover: a takeover keeps the claim time, and so the expiry.
//   - TTLBoundary: a key is absent from exactly claim time plus TTL.
//   - TTLRetrySameMessage: the same message after the TTL makes a new claim, with its own claim time.
//   - ReclaimAfterRelease: a claim after a Release is new: its claim time and TTL are its own.
//   - BindAfterTTL: past the TTL the owner's Bind gets ErrNotOwner and brings nothing back.
//
// Concurrency (across two handles too, when Harness.OpenHandle is offered):
//
//   - ExactlyOneWinner: 32 goroutines claim one key at once, over 50 keys: one Claimed each.
//   - ExactlyOneWinnerOtherMessages: the same with a message per goroutine.
//   - ExactlyOneTakeover: concurrent retries take an abandoned claim over once.
//   - ExactlyOneWinnerTwoHandles: ExactlyOneWinner across two handles (needs Harness.OpenHandle).
//   - TakeoverFencedAcrossHandles: a takeover through one handle fences the other's token.
//   - ConcurrentBinds: conflicting Binds at once: the ones that succeed agree with the binding kept.
//   - BindRacingTakeover: an old owner's late Bind and a takeover never both win.
//   - ReleaseRacingTakeover: an old owner's late Release never deletes the new owner's claim.
//   - LookupsSeeWholeBindings: Lookups racing a Bind see it whole or not at all.
//   - HandlesSeeEachOther: a second handle that read a key sees at once what the first did since:
//     bind, a reply added, release, another message's claim, takeover, extension, expiry (needs
//     Harness.OpenHandle).
//   - CapacityConcurrent: concurrent claims of distinct keys fill a scope to exactly its bound.
//   - SweepRacingClaims: a sweep in small batches never deletes the fresh claims made while it
//     runs, across both handles (needs the TTL).
//
// Identity:
//
//   - ScopeIsolation: the same key in several scopes, the empty one among them, is independent claims.
//   - ScopeKeyNoCollision: no join of scope and key, in either order, with or without a separator.
//   - ScopeIdentity: scopes that differ by case, a space, a separator or normalization are apart.
//   - KeyLengths: keys of every length from 16 to 255, each a prefix of the next, are apart.
//   - KeyCase: keys that differ only in case are apart.
//   - MessageIDIdentity: message ids of up to idempotency.MaxMessageIDLength (4096)
//     bytes are compared whole, byte for byte.
//   - ManyKeys: a thousand random keys are a thousand claims (no short hash stands for a key).
//   - HashCollisions: pairs of keys that collide under CRC-32 (three polynomials), Java's hashCode
//     and djb2 however scope and key are joined, and under FNV-1 and FNV-1a (32-bit) after a dozen
//     separators, are distinct claims.
//   - KeySurvivesTaskDeletion: deleting a task keeps its key (needs Harness.CreateTask and
//     Harness.DeleteTask; without them, BoundKeyNeverTakenOver and TTLExpiresKey still show
//     that a bound key is not forgotten within its TTL).
//
// Contexts and input:
//
//   - CancelledClaim, CancelledTakeover, CancelledBind, CancelledRelease, CancelledLookup,
//     CancelledExtend: a done context (cancelled, or past its deadline) gets an error wrapping ctx.Err(), whatever
//     the key's state, and changes nothing.
//   - InvalidKey, InvalidMessageID, InvalidLease, InvalidToken, InvalidBinding: bad input gets
//     ErrInvalidArgument and changes nothing (Extend's too); the zero token is refused before the
//     key is looked up, on keys not held as on keys held.
//   - InvalidOnHeldKey: the same on keys already held, pending or bound.
//
// Optional interfaces:
//
//   - HonoursKeys: an [idempotency.Honouring] index honours keys.
//   - CapacityCountsClaims: [idempotency.CapacityReporter] counts a scope's keys, the empty scope's too.
//   - CapacityFull: a full scope refuses new keys with ErrFull, evicts nothing and still
//     answers retries and other messages (needs a bound of at most 10,000 keys per scope; an
//     index that reports no bound must take 1,000 keys in one scope, and as many more as it
//     claims within a second, up to 131,072). An index whose Capacity returns
//     errors.ErrUnsupported (it keeps no count) skips the other Capacity checks, and this
//     one only probes that it refuses no key of one scope.
//   - CapacityIgnoresExpired: expired keys do not keep a scope full (needs the TTL).
//   - CapacityFullAbandoned: abandoned claims keep a scope full, and are taken over in it.
//   - CapacityReclaimExpired: a key claimed again past its TTL takes back its own place: the
//     scope counts its bound, and a release makes room for exactly one key (needs the TTL).
//   - SweepDeletesOldKeys: [idempotency.Sweeper] deletes old keys, keeps young ones, reports.
//   - SweepKeepsPendingInLease: it never deletes a pending claim whose lease runs.
//   - SweepKeepsYoungKeys: it never deletes a young key, even an abandoned claim.
//   - SweepPolicyAge: it honours the default age, the task retention clamp and a disabled sweep.
//   - SweepBatches: it honours BatchSize and MaxBatches, reports Complete and exact totals.
//   - SweepCancelled: with a cancelled context it returns the context's error.
//   - SweepCancelledMidway: a context that ends between batches gets the report so far.
//   - SweepCancelledBetweenBatches: a context that ends right after the sweep first looks at it
//     stops the sweep within a batch: the context is checked between every two batches.
//
// # What is proven
//
// Each sentence of the [idempotency.KeyIndex] contract, and the checks that fail when an
// index breaks it. The suite's own tests hold, for every sentence, broken indexes that
// break it the way a Redis, DynamoDB or SQL author slips, on a map behind one mutex and
// on a copy of memstore's sharded design, and fail when a named check lets one pass.
//
//   - Claim-Free: an absent key is Claimed with a fresh, non-zero token and stored pending.
//     ClaimFreeKey, ReleaseFreesPending, LookupRecord.
//   - Claim-Same: a key held by the same message gives HeldBySameMessage and the current
//     Record. RetrySameMessagePending, RetrySameMessageBoundTask, RetrySameMessageBoundReply.
//   - Claim-Other: a key held by another message gives HeldByOtherMessage, an empty Record
//     and no token. OtherMessageHeld, ExactlyOneWinnerOtherMessages.
//   - Claim-One: concurrent Claims of one key resolve to exactly one Claimed. ExactlyOneWinner,
//     ExactlyOneWinnerOtherMessages, ExactlyOneWinnerTwoHandles, ExactlyOneTakeover.
//   - Lease-End: a pending claim is abandoned once its lease ended, at exactly claim time
//     plus lease, and not before. LeaseHeldBeforeEnd, LeaseBoundary, LeaseSubSecond,
//     LeaseNotExtendedByReplay, LookupReadOnly.
//   - Takeover: the same message takes an abandoned claim over with a new token and a fresh
//     lease of its own Claim's length, and the old token is fenced out. LeaseTakeover,
//     TakeoverLease, TakeoverFencedAcrossHandles, BindRacingTakeover, ReleaseRacingTakeover.
//   - Takeover-Time: a takeover keeps the claim time. LeaseTakeover, TTLNotExtendedByTakeover.
//   - Takeover-Other: another message never takes over. LeaseOtherMessageNoTakeover.
//   - Reclaim: a key claimed while absent (released, expired) is a new claim, with its own
//     claim time and TTL. ReclaimAfterRelease, TTLRetrySameMessage.
//   - Full: a full scope refuses a new key with ErrFull and evicts no pending claim, abandoned
//     or not; a key already held is answered as anywhere; an expired key claimed again keeps
//     one place. CapacityFull, CapacityFullAbandoned, CapacityConcurrent, CapacityIgnoresExpired,
//     CapacityReclaimExpired.
//   - Bind-Owner: only the current owner binds; another token, or a key not held, gets
//     ErrNotOwner, the token checked first, also once the lease ended and nobody took over.
//     BindWrongToken, BindNotHeld, ReleasedTokenRefused, BindAfterTTL, LeaseTakeover,
//     StaleTokensAfterLeaseEnd.
//   - Bind-Idempotent: binding what is bound, or a part of it, succeeds and changes nothing.
//     BindIdempotent, BindTaskThenReply, ConcurrentBinds.
//   - Bind-Change: a task id may gain a reply; any other change gets ErrAlreadyBound, judged
//     byte for byte. BindConflict, BindTaskThenReply, ConcurrentBinds, EmptyReplyBesideTask,
//     RebindEveryPart.
//   - Bound-Kept: a bound key (to a task, or a reply alone) is no longer pending: never
//     released, never taken over. ReleaseBoundIsNoop, BoundKeyNeverTakenOver.
//   - Release-Frees: Release by the owner frees a pending claim. ReleaseFreesPending,
//     ReleaseRacingTakeover.
//   - Release-Absent: releasing a key not held returns nil. ReleaseNotHeld.
//   - Release-Owner: Release under another token gets ErrNotOwner and changes nothing.
//     ReleaseWrongToken, ReleasedTokenRefused, LeaseTakeover.
//   - Lookup: Lookup reports what is known now, and changes nothing. LookupAbsent,
//     LookupRecord, LookupReadOnly, LookupsSeeWholeBindings.
//   - Token-Unique: tokens are unique per index, never zero, a takeover's as a new claim's.
//     TokensUnique, ReleasedTokenRefused, TakeoverTokensUnique.
//   - Scope: a scope partitions keys. ScopeIsolation, ScopeKeyNoCollision, ScopeIdentity.
//   - Identity: keys, scopes and message ids are compared byte for byte, whole, however
//     many, and never by a short hash alone. KeyLengths, KeyCase, MessageIDIdentity,
//     ScopeIdentity, ManyKeys, HashCollisions.
//   - Invalid: bad input gets ErrInvalidArgument, whatever the key's state, and changes
//     nothing, bad input judged before the key is looked up. InvalidKey, InvalidMessageID,
//     InvalidLease, InvalidToken, InvalidBinding, InvalidOnHeldKey.
//   - Context: a done ctx gets an error wrapping ctx.Err(), whatever the key's state, and
//     nothing takes effect. CancelledClaim, CancelledTakeover, CancelledBind,
//     CancelledRelease, CancelledLookup, CancelledExtend.
//   - TTL: a key lives for the TTL from its first claim; replays and takeovers do not extend
//     it; past it the key is absent. TTLExpiresKey, TTLNotExtendedByReplay, TTLBoundary,
//     TTLNotExtendedByTakeover, BindAfterTTL.
//   - Task-Deleted: a key is never deleted because its task was. KeySurvivesTaskDeletion.
//   - Verbatim: a reply is stored byte for byte; an empty reply counts as none.
//     ReplyVerbatim, EmptyReplyBesideTask, RetrySameMessageBoundReply.
//   - Aliasing: no returned Record shares memory with the index, the caller's Reply or
//     another Record. ReplyNotAliased, RecordsNotAliased.
//   - Sweep-Age: a sweep deletes keys older than the policy's age and no younger one.
//     SweepDeletesOldKeys, SweepPolicyAge, SweepKeepsYoungKeys, SweepRacingClaims (a key
//     claimed afresh while the sweep runs is young).
//   - Sweep-Lease: a sweep never deletes a pending claim whose lease runs.
//     SweepKeepsPendingInLease.
//   - Sweep-Report: a sweep honours its batches and reports exactly what it did; a done ctx
//     gets the report so far and ctx's error, ctx checked between every two batches.
//     SweepBatches, SweepCancelled, SweepCancelledMidway, SweepCancelledBetweenBatches.
//   - Capacity: Capacity counts a scope's keys, the empty scope's too, and reports no bound
//     (Limit 0, or errors.ErrUnsupported) only when none is enforced. CapacityCountsClaims,
//     CapacityFull.
//   - Handles: what one handle does, another on the same storage sees at once, as another
//     process would. HandlesSeeEachOther, ExactlyOneWinnerTwoHandles, TakeoverFencedAcrossHandles.
//   - Extend-Owner: only the owner's token extends a claim; another gets ErrNotOwner and
//     changes nothing. ExtendOnlyOwner, ExtendFencedOut.
//   - Extend-Pending: only a pending claim whose lease runs is extended: absent, expired, bound
//     or ended (now at or past LeaseExpiresAt, taken over or not) gets ErrNotOwner, and
//     nothing is revived. ExtendOnlyPending, ExtendAfterLeaseEnd, ExtendBoundary.
//   - Extend-Fenced: after a takeover, a release or a bind, the old token never extends.
//     ExtendFencedOut.
//   - Extend-Now: the lease then ends at exactly now plus lease, later or earlier than before.
//     ExtendFromNow, ExtendBoundary.
//   - Extend-Else: Extend changes no claim time, TTL, token or count. ExtendKeepsClaim.
//   - Extend-Race: an Extend and a takeover racing: one wins, never both. ExtendRacingTakeover.
//
// Concurrency checks start many goroutines released together; some races show only
// now and then, so run the suite under the race detector and more than once
// (go test -race -count=3). [Benchmark] measures claims on distinct keys and on one hot
// key with b.RunParallel, and doubles as a race probe.
//
// The package imports only the standard library and the kit's root package, so a
// store author's tests inherit no dependency.
package conformance
