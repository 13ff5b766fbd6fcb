package redisstore

import "github.com/redis/go-redis/v9"

// The scripts that decide on the server, atomically, what a claim of a key already
// held, a claim on a store with a per-scope bound, and every other operation do. Each
// runs by EVALSHA, and by EVAL when the server does not know it yet (after a restart,
// a failover or SCRIPT FLUSH), which loads it for the next call.
//
// Every script reads one record, KEYS[1] (see rec for its values and its relative
// form, which load turns absolute), and the scripts that claim, release or count also
// the scope's set, KEYS[2] (KEYS[1] of capacity), a sorted set of the scope's keys
// scored by the end of their time to live, kept only by a store with a bound. ARGV[1]
// is the current time in microseconds ([Options.Now]), or empty for the server's
// clock. On the server's clock a record Redis still holds is within its time to live
// (see rec), so the scripts read the clock (TIME) only to judge a lease or to count.
// Times are Lua numbers (doubles): microseconds since 1970 stay exact below 2^53, in
// the year 2255; the store caps leases so that their ends stay below it too. Times go
// to Redis commands as text formatted with %.0f, never as Lua numbers, which Redis
// would print with 14 digits; MessagePack stores them as integers.
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
// (no-writes). The flags, SET NX GET and PEXPIRETIME need Redis 7.0 or Valkey 7.2, or
// later.
const prelude = `
local function clock(a)
  if a ~= '' then return tonumber(a) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n) return string.format('%.0f', n) end
local function absolute(name, v)
  local f = {cmsgpack.unpack(v)}
  if f[3] == false then
    local x = redis.call('PEXPIRETIME', name)
    assert(x >= 0, 'a relative record without an expiry')
    f[3] = (x - f[5] + 1) * 1000
    f[4] = f[3] + f[4]
    f[5] = (x + 1) * 1000
  end
  return f
end
local function load(name)
  local v = redis.call('GET', name)
  if not v then return nil end
  return absolute(name, v)
end
local function live(f, a) return a == '' or tonumber(a) < f[5] end
local function pack(f) return cmsgpack.pack(f[1], f[2], f[3], f[4], f[5], f[6], f[7]) end
local function save(name, f) return redis.call('SET', name, pack(f), 'KEEPTTL') end
`

// claimScript: ARGV[2] the new record, packed, ARGV[3] its message id, ARGV[4] its
// token, ARGV[5] the lease (µs), ARGV[6] the TTL (ms), ARGV[7] the key (its member in
// the scope's set), ARGV[8] the per-scope bound (0: none, and no count). It returns
// {1} claimed (with ARGV[4]), {2, r} held by the same message (r the record, packed),
// {3} held by another message, {0} the scope is full.
//
// The new record is written first (SET NX GET: one command when the key is absent),
// then counted; when the count finds the scope full, both are undone. A record that
// already holds ARGV[4] was made by this very call, sent again by the client after a
// lost answer; it is claimed.
var claimScript = redis.NewScript(`#!lua
` + prelude + `
local old = redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[6], 'GET')
local now
if old then
  local f = absolute(KEYS[1], old)
  now = clock(ARGV[1])
  if now < f[5] then
    if f[2] == ARGV[4] then return {1} end
    if f[1] ~= ARGV[3] then return {3} end
    if f[6] == '' and f[7] == '' and now >= f[4] then
      f[2], f[4] = ARGV[4], now + tonumber(ARGV[5])
      save(KEYS[1], f)
      return {1}
    end
    return {2, pack(f)}
  end
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[6])
end
local limit = tonumber(ARGV[8])
if limit == 0 then return {1} end
now = now or clock(ARGV[1])
local e
if ARGV[1] == '' then
  e = (redis.call('PEXPIRETIME', KEYS[1]) + 1) * 1000
else
  e = now + tonumber(ARGV[6]) * 1000
end
if now % 8 == 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now)) end
if redis.call('ZADD', KEYS[2], fmt(e), ARGV[7]) == 1 and redis.call('ZCARD', KEYS[2]) > limit then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now))
  if redis.call('ZCARD', KEYS[2]) > limit then
    redis.call('ZREM', KEYS[2], ARGV[7])
    redis.call('DEL', KEYS[1])
    return {0}
  end
end
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return {1}
`)

// bindScript: ARGV[2] token, ARGV[3] task id, ARGV[4] reply (either may be empty, not
// both). It returns 1 bound (or already bound to this, or more), 0 not the owner, 2
// bound to something else. A binding writes the record absolute.
var bindScript = redis.NewScript(`#!lua
` + prelude + `
local f = load(KEYS[1])
if not f or f[2] ~= ARGV[2] or not live(f, ARGV[1]) then return 0 end
local t, r, bt, br = f[6], f[7], ARGV[3], ARGV[4]
if t == '' and r == '' then
  f[6], f[7] = bt, br
  save(KEYS[1], f)
  return 1
end
if (bt == '' or bt == t) and (br == '' or br == r) then return 1 end
if t ~= '' and bt == t and r == '' then
  f[7] = br
  save(KEYS[1], f)
  return 1
end
return 2
`)

// releaseScript: ARGV[2] token, ARGV[3] the key. It returns 1 released or nothing to
// release (absent, past its time to live, or bound under the token), 0 held under
// another token.
var releaseScript = redis.NewScript(`#!lua flags=allow-oom
` + prelude + `
local f = load(KEYS[1])
if not f or not live(f, ARGV[1]) then return 1 end
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
local f = load(KEYS[1])
if not f or f[2] ~= ARGV[2] or f[6] ~= '' or f[7] ~= '' then return 0 end
local now = clock(ARGV[1])
if now >= f[5] or now >= f[4] then return 0 end
f[4] = now + tonumber(ARGV[3])
save(KEYS[1], f)
return 1
`)

// lookupScript returns {0} absent (or past its time to live), or {1, r}, r the
// record, absolute, packed.
var lookupScript = redis.NewScript(`#!lua flags=no-writes
` + prelude + `
local f = load(KEYS[1])
if not f or not live(f, ARGV[1]) then return {0} end
return {1, pack(f)}
`)

// capacityScript returns the number of the scope's keys within their time to live.
var capacityScript = redis.NewScript(`#!lua flags=no-writes
` + prelude + `
local now = clock(ARGV[1])
return redis.call('ZCOUNT', KEYS[1], '(' .. fmt(now), '+inf')
`)
