// Package redisstore is an [idempotency.KeyIndex] on Redis or Valkey, through
// github.com/redis/go-redis/v9. Several processes (replicas of one server, or
// sidecars) may share one server: every operation is one command or one Lua script
// that the server runs atomically, so concurrent claims of one key resolve to exactly
// one winner across every process, without locks held between round trips.
//
// It is a module of its own, so that users of the other packages of the kit inherit no
// Redis client. Create a [Store] on any [redis.UniversalClient] (one node, Sentinel or
// Cluster), or from a redis:// or rediss:// URL:
//
//	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
//	store, err := redisstore.New(rdb, redisstore.Options{})
//
//	store, err := redisstore.OpenURL(ctx, "rediss://:secret@cache:6380/0", redisstore.Options{})
//
// It needs Redis 7.0 or Valkey 7.2, or later (SET NX GET, PEXPIRETIME, script flags).
//
// # Keys in Redis
//
// Each idempotency key is one string, named prefix + "{s" + hex(scope) + "}" + key,
// that packs (MessagePack) its message id, fencing token, claim time, lease end, end of
// its time to live, and task id and reply once bound. A store with a per-scope bound
// ([Options.MaxKeysPerScope]) also keeps, for each scope, one sorted set named
// prefix + "{s" + hex(scope) + "}", of its keys scored by the end of their time to
// live: the per-scope count, kept exactly by the scripts that claim and release. The
// hash tag puts a scope's keys and its count in one hash slot, so that one script may
// touch both on Redis Cluster: a Cluster spreads scopes (tenants) over its nodes, not
// the keys of one scope. The names are unambiguous (hex has no braces, keys have none,
// the prefix may have none), so no two (scope, key) pairs meet.
//
// # Round trips
//
// On a store without a per-scope bound (the default), a claim is one command,
// SET name record PX ttl NX GET: it writes the claim when the key is absent, and
// otherwise answers the record held, from which the store tells a key held by another
// message, or bound for this one, without more. Only a retry of a claim still pending
// (in flight, or abandoned: a takeover once its lease has ended) sends a second round
// trip, a script that judges the lease on the server's clock. With a bound, every
// claim is one script, which counts the key in its scope. Bind, Release, Extend and
// Lookup each send one script by EVALSHA, and Capacity one with a bound (none
// without). When the server does not know a script yet (first use after a restart, a
// failover or SCRIPT FLUSH) it answers NOSCRIPT and the store sends it once by EVAL,
// which loads it. A keyed first send costs two round trips: the claim and the bind.
// Fencing tokens are 63 random bits from crypto/rand, as in sqlstore. A claim that was
// sent again by the client after a lost answer (go-redis retries on network errors)
// recognises its own token and reports the claim it made.
//
// # Time
//
// Leases and times to live are decided by the server's clock, so processes whose
// clocks disagree still agree on leases; [Options.Now] replaces it for tests. A claim
// of an absent key does not read the clock: its record holds the lease's and the
// TTL's lengths, and its times follow from the expiry that SET PX gives the key (read
// by PEXPIRETIME, kept exactly by replicas and the AOF): the claim time is the
// millisecond after the SET, the lease ends a lease after it, and the time to live a
// TTL after it, when Redis counts the key as expired. So a key Redis still holds is
// within its time to live, to the microsecond. The scripts read the clock (TIME, in
// microseconds) to judge a lease, and write a record's times in full when they rewrite
// it. A key's time to live runs from its first claim ([Options.TTL], 24 hours by
// default, in whole milliseconds) and Redis deletes the key at its end; takeovers,
// binds and extensions do not move it. Nothing is deleted with a task: keys leave only
// by a Release of a pending claim or by expiry.
//
// The store does not implement [idempotency.Sweeper]: Redis deletes every key at the
// end of its time to live and frees its memory, so there is nothing left to sweep. To
// keep keys for a shorter or longer time, set [Options.TTL], and keep it at least as
// long as the server keeps finished tasks: a key gone before its task lets a retry
// run the agent again.
//
// # Bounds
//
// The memory of the whole store is Redis's: set maxmemory, and maxmemory-policy
// noeviction, so that a full server refuses new claims and binds (the store reports
// them as [idempotency.ErrFull], and the middleware answers 503) rather than evicting
// keys. An eviction policy (allkeys-*, volatile-*: every key of the store has a time to
// live) may delete a key in flight or bound, and then a retry runs the agent again;
// the store's [Store.HonoursKeys] (checked by the middleware once a second) reports
// false on such a server, and on a replica, so that keyed sends are refused rather
// than deduplicated on keys the server may drop. [Store.Check] says why.
//
// By default no scope is bounded on its own, as in sqlstore: the scope is what the
// client sends unless the server derives it from an authenticated caller, so a bound
// per scope bounds little that maxmemory does not, and keeping its count costs each
// claim a script of several commands (about half the throughput of a bare SET).
// [Store.Capacity] then returns an error wrapping [errors.ErrUnsupported].
// [Options.MaxKeysPerScope] (or ?max-keys-per-scope=N in the URL), when positive,
// bounds each scope: a claim of a new key in a full scope returns an error wrapping
// [idempotency.ErrFull], never evicting a claim, expired keys leave the count at once,
// and Capacity reports it. Use it where scopes are authenticated tenants that must not
// crowd each other out.
//
// A bound key with a 32-byte key, the empty scope and UUID message and task ids takes
// about 310 bytes of Redis's used_memory without a bound: 232 bytes of MEMORY USAGE
// for its record (with a 22-byte prefix; 184 while pending) and the server's
// dictionary and expiry entries. With a bound, its member of the scope's sorted set
// adds 145, about 440 in all (BenchmarkHeldKeyMemory, Redis 7.0). A million keys take
// about 310 MB, or 440 MB with a bound.
//
// # Durability
//
// Redis keeps its data in memory; what a restart keeps depends on its persistence
// settings, and what is lost is a claim the kit no longer sees.
//
//   - No persistence (save "" and appendonly no): a restart of Redis loses every key.
//     Retries of sends made before it run the agent again.
//   - RDB snapshots only (save ...): a restart returns to the last snapshot; keys
//     claimed or bound since (minutes, by the save rules) are lost as above.
//   - AOF with appendfsync everysec (the usual setting): a crash of the Redis process
//     loses nothing that reached the kernel; a crash of the machine loses up to about
//     one second of claims and binds.
//   - AOF with appendfsync always: each command's or script's writes are on disk
//     before the server answers, so nothing acknowledged is lost, at the cost of a
//     fsync per claim and per bind.
//
// Replication is asynchronous. A failover to a replica that had not received the last
// writes loses them, whatever the persistence: a claim acknowledged by the old primary
// may be absent on the new one. An identical retry then claims the key afresh and runs
// the agent a second time, while the first run may still go on: exactly-once does not
// hold across such a failover. The first attempt learns of it at its next call: its
// Extend (the middleware renews a running send's lease) and its Bind get
// [idempotency.ErrNotOwner], since its token is unknown to the new primary; the
// middleware then stops renewing and logs that a retry may have won, but cannot undo
// either run. A bind lost the same way leaves the key pending under the old token; a
// retry waits for the lease to end and then takes it over, which runs the agent again
// too. WAIT after each write would narrow the window but not close it (Redis does not
// roll back a write that WAIT did not see replicated), and the store does not use it.
// A restart that loses writes (the persistence settings above) has the same effect.
//
// Recommended: appendonly yes with appendfsync everysec, maxmemory-policy noeviction,
// and, where a run twice after a failover is not acceptable, appendfsync always and
// min-replicas-to-write 1 (which refuses writes, and so claims, when no replica keeps
// up, so the middleware answers 503 instead of accepting a claim that a failover could
// lose). For exactly-once across a failover without any window, use PostgreSQL
// (sqlstore) with synchronous replication.
package redisstore
