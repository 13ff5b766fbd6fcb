// Package memstore is the in-memory [idempotency.KeyIndex]: the default index of the
// kit, for a single server process whose retries reach the same process.
//
// A [Store] keeps every claim in memory, so its keys do not survive a restart and are
// not shared between processes; use sqlstore for that. Within one process it is safe
// for concurrent use and scales across cores: keys are spread over independently
// locked shards, and fencing tokens are issued without a shared counter.
//
// Keys live for [Options.TTL] (24 hours by default), counted from their first claim.
// Expired keys count as absent at once, and their memory is freed without a background
// goroutine: every Claim deletes a few of the oldest expired keys of its shard, so a
// store under steady traffic holds about one TTL's worth of keys. [Store.PurgeExpired]
// frees memory at a time the operator chooses, and applies a shorter retention policy.
//
// Each scope holds at most [Options.MaxKeysPerScope] keys (100,000 by default), and all
// scopes together at most [Options.MaxBytes] of memory (256 MiB by default; a key
// counts its text plus [KeyOverhead], at most [MaxKeyBytes], a bit over 1 MiB, with
// the longest values [idempotency.CheckLengths] lets through). A Claim in a full scope,
// or a full store, first deletes expired keys, and when there is still no room it
// returns an error wrapping [idempotency.ErrFull]: the store never evicts a claim in
// flight, nor a bound key whose time to live is still running, to make room.
package memstore
