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
//   - ReleaseBoundIsNoop: Release of a bound key returns nil and keeps it bound.
//   - ReleaseNotHeld: releasing a key not held returns nil.
//   - ReleasedTokenRefused: a released claim's token no longer binds nor releases.
//   - TokensUnique: tokens are unique across keys and across claims of one key.
//   - BindWrongToken: only the owner binds; others get ErrNotOwner.
//   - BindIdempotent: binding the same value again succeeds.
//   - BindConflict: binding another value gets ErrAlreadyBound.
//   - BindTaskThenReply: a task id may gain a reply with the same task id, nothing else;
//     rebinding either part alone afterwards is a no-op.
//   - BindNotHeld: Bind of a key not held gets ErrNotOwner.
//   - ReplyNotAliased: the index keeps its own copy of a reply.
//
// Leases (on the controllable clock when offered, else on the real clock):
//
//   - LeaseHeldBeforeEnd: before the lease ends, a retry does not take over.
//   - LeaseTakeover: after it, a retry takes over with a new token, a full lease and the
//     original claim time, and the old token is fenced out.
//   - LeaseOtherMessageNoTakeover: another message never takes over.
//   - LateBindWithoutTakeover: an owner whose lease ended, nobody having taken over, still binds.
//   - BoundKeyNeverTakenOver: a bound key is kept past its lease.
//   - LeaseNotExtendedByReplay: a retry does not extend the lease.
//
// Time to live (needs Harness.Advance and Harness.TTL):
//
//   - TTLExpiresKey: a key is held until its TTL and absent after it.
//   - TTLNotExtendedByReplay: the TTL runs from the first claim, whatever the retries.
//   - TTLNotExtendedByTakeover: a takeover keeps the claim time, and so the expiry.
//
// Concurrency:
//
//   - ExactlyOneWinner: 32 goroutines claim one key at once, over 50 keys: one Claimed each.
//   - ExactlyOneWinnerOtherMessages: the same with a message per goroutine.
//   - ExactlyOneTakeover: concurrent retries take an abandoned claim over once.
//   - ExactlyOneWinnerTwoHandles: ExactlyOneWinner across two handles (needs Harness.OpenHandle).
//   - TakeoverFencedAcrossHandles: a takeover through one handle fences the other's token.
//
// Scopes, tasks, contexts and input:
//
//   - ScopeIsolation: the same key in several scopes, the empty one among them, is independent claims.
//   - ScopeKeyNoCollision: scope and key are not joined into one string.
//   - KeySurvivesTaskDeletion: deleting a task keeps its key (needs Harness.CreateTask and
//     Harness.DeleteTask; without them, BoundKeyNeverTakenOver and TTLExpiresKey still show
//     that a bound key is not forgotten within its TTL).
//   - CancelledClaim, CancelledBind, CancelledRelease, CancelledLookup: a done context
//     (cancelled, or past its deadline) gets an error and changes nothing.
//   - InvalidKey, InvalidMessageID, InvalidLease, InvalidToken, InvalidBinding: bad input gets
//     ErrInvalidArgument and changes nothing.
//
// Optional interfaces:
//
//   - HonoursKeys: an [idempotency.Honouring] index honours keys.
//   - CapacityCountsClaims: [idempotency.CapacityReporter] counts a scope's keys.
//   - CapacityFull: a full scope refuses new keys with ErrFull, evicts nothing and still
//     answers retries (needs a bound of at most 10,000 keys per scope).
//   - CapacityIgnoresExpired: expired keys do not keep a scope full (needs the TTL).
//   - SweepDeletesOldKeys: [idempotency.Sweeper] deletes old keys, keeps young ones, reports.
//   - SweepKeepsPendingInLease: it never deletes a pending claim whose lease runs.
//   - SweepPolicyAge: it honours the default age, the task retention clamp and a disabled sweep.
//   - SweepBatches: it honours BatchSize and MaxBatches and reports Complete.
//   - SweepCancelled: with a cancelled context it returns the context's error.
//
// Concurrency checks start many goroutines released together; some races show only
// now and then, so run the suite under the race detector and more than once
// (go test -race -count=3). [Benchmark] measures claims on distinct keys and on one hot
// key with b.RunParallel, and doubles as a race probe.
//
// The package imports only the standard library and the kit's root package, so a
// store author's tests inherit no dependency.
package conformance
