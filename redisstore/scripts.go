package redisstore

import "github.com/redis/go-redis/v9"

// The scripts that decide every operation on the server, atomically. Each runs by
// EVALSHA, and by EVAL when the server does not know it yet (after a restart, a
// failover or SCRIPT FLUSH), which loads it for the next call.
//
// Every script reads one record, KEYS[1], a string that packs with MessagePack
// (cmsgpack, built into Redis's Lua) the values
//
//	m  the message id that claimed the key
//	k  the fencing token, as decimal text
//	c  the claim time, microseconds since the Unix epoch
//	l  the lease end, in the same unit
//	e  the end of the key's time to live (c plus the store's TTL), in the same unit
//	t  the bound task id, empty until bound
//	r  the bound reply, empty until bound
//
// and the scripts that claim, release or count also the scope's set, KEYS[2] (KEYS[1]
// of capacity), a sorted set of the scope's keys scored by the end of their time to
// live. One string, rather than a hash, lets a claim write the record and its expiry
// in one command (SET PX), and the others keep the expiry (SET KEEPTTL). ARGV[1] is
// the current time in microseconds, or empty for the server's clock (TIME). Times are
// Lua numbers (doubles): microseconds since 1970 stay exact below 2^53, in the year
// 2255; the store caps leases so that their ends stay below it too. Times go to Redis
// commands as text formatted with %.0f, never as Lua numbers, which Redis would print
// with 14 digits; MessagePack stores them as integers.
//
// A record is past its time to live when now >= e. Redis deletes it by its expiry at
// the same moment or up to a millisecond later (the expiry is rounded up), so the
// scripts also treat a record still there but past e as absent.
//
// The scope's set may hold members past their time to live (whose records Redis has
// deleted) until a claim sweeps them: one claim of a new key in eight (by the
// microseconds of the clock), and every claim that would otherwise find the scope
// full. The count a full scope is judged by, and the one Capacity reports, is of live
// members only, so it is exact.
//
// Claim and bind are checked against maxmemory before they start (a "#!lua" line
// without allow-oom), so that a server out of memory refuses them whole rather than
// half-done; release only deletes, and extend rewrites a record of the same size, so
// both run when memory is full (allow-oom). Lookup and capacity write nothing
// (no-writes). The flags need Redis 7.0 or Valkey 7.2, or later.
const prelude = `
local function clock(a)
  if a ~= '' then return tonumber(a) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%.0f', n) end
local function load(name)
  local v = redis.call('GET', name)
  if not v then return nil end
  return {cmsgpack.unpack(v)}
end
local function save(name, f, ...)
  return redis.call('SET', name, cmsgpack.pack(f[1], f[2], f[3], f[4], f[5], f[6], f[7]), ...)
end
`

// claimScript: ARGV[2] message id, ARGV[3] the new token, ARGV[4] lease (µs), ARGV[5]
// TTL (µs), ARGV[6] the key (its member in the scope's set), ARGV[7] the per-scope
// bound (0: none). It returns {1} claimed (with ARGV[3]), {2, t, r, c, l} held by the
// same message, {3} held by another message, {0} the scope is full.
//
// A new claim is written first (SET NX PX: one command when the key is absent, the
// common case), then counted; when the count finds the scope full, both are undone.
// A record that already holds ARGV[3] was made by this very call, sent again by the
// client after a lost answer; it is claimed.
var claimScript = redis.NewScript(`#!lua
` + prelude + `
local now = clock(ARGV[1])
local ttl, lease = tonumber(ARGV[5]), tonumber(ARGV[4])
local e, ms = now + ttl, fmt(math.ceil(ttl / 1000))
local rec = cmsgpack.pack(ARGV[2], ARGV[3], now, now + lease, e, '', '')
if not redis.call('SET', KEYS[1], rec, 'NX', 'PX', ms) then
  local f = load(KEYS[1])
  if now < f[5] then
    if f[2] == ARGV[3] then return {1} end
    if f[1] ~= ARGV[2] then return {3} end
    if f[6] == '' and f[7] == '' and now >= f[4] then
      f[2], f[4] = ARGV[3], now + lease
      save(KEYS[1], f, 'KEEPTTL')
      return {1}
    end
    return {2, f[6], f[7], fmt(f[3]), fmt(f[4])}
  end
  redis.call('SET', KEYS[1], rec, 'PX', ms)
end
local limit = tonumber(ARGV[7])
if now % 8 == 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now)) end
if redis.call('ZADD', KEYS[2], fmt(e), ARGV[6]) == 1 and limit > 0 and redis.call('ZCARD', KEYS[2]) > limit then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now))
  if redis.call('ZCARD', KEYS[2]) > limit then
    redis.call('ZREM', KEYS[2], ARGV[6])
    redis.call('DEL', KEYS[1])
    return {0}
  end
end
redis.call('PEXPIRE', KEYS[2], ms)
return {1}
`)

// bindScript: ARGV[2] token, ARGV[3] task id, ARGV[4] reply (either may be empty, not
// both). It returns 1 bound (or already bound to this, or more), 0 not the owner, 2
// bound to something else.
var bindScript = redis.NewScript(`#!lua
` + prelude + `
local now = clock(ARGV[1])
local f = load(KEYS[1])
if not f or f[2] ~= ARGV[2] or now >= f[5] then return 0 end
local t, r, bt, br = f[6], f[7], ARGV[3], ARGV[4]
if t == '' and r == '' then
  f[6], f[7] = bt, br
  save(KEYS[1], f, 'KEEPTTL')
  return 1
end
if (bt == '' or bt == t) and (br == '' or br == r) then return 1 end
if t ~= '' and bt == t and r == '' then
  f[7] = br
  save(KEYS[1], f, 'KEEPTTL')
  return 1
end
return 2
`)

// releaseScript: ARGV[2] token, ARGV[3] the key. It returns 1 released or nothing to
// release (absent, past its time to live, or bound under the token), 0 held under
// another token.
var releaseScript = redis.NewScript(`#!lua flags=allow-oom
` + prelude + `
local now = clock(ARGV[1])
local f = load(KEYS[1])
if not f or now >= f[5] then return 1 end
if f[2] ~= ARGV[2] then return 0 end
if f[6] ~= '' or f[7] ~= '' then return 1 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[3])
return 1
`)

// extendScript: ARGV[2] token, ARGV[3] lease (µs). It returns 1 extended, 0 not the
// owner of a pending claim whose lease runs.
var extendScript = redis.NewScript(`#!lua flags=allow-oom
` + prelude + `
local now = clock(ARGV[1])
local f = load(KEYS[1])
if not f or f[2] ~= ARGV[2] or now >= f[5] or now >= f[4] or f[6] ~= '' or f[7] ~= '' then
  return 0
end
f[4] = now + tonumber(ARGV[3])
save(KEYS[1], f, 'KEEPTTL')
return 1
`)

// lookupScript returns {0} absent (or past its time to live), or {1, m, t, r, c, l}.
var lookupScript = redis.NewScript(`#!lua flags=no-writes
` + prelude + `
local now = clock(ARGV[1])
local f = load(KEYS[1])
if not f or now >= f[5] then return {0} end
return {1, f[1], f[6], f[7], fmt(f[3]), fmt(f[4])}
`)

// capacityScript returns the number of the scope's keys within their time to live.
var capacityScript = redis.NewScript(`#!lua flags=no-writes
` + prelude + `
local now = clock(ARGV[1])
return redis.call('ZCOUNT', KEYS[1], '(' .. fmt(now), '+inf')
`)
