-- GCRA token buckets and in-flight slot sets for a batch of calls, decided one after the
-- other in one atomic script: every call of RedisLimiter made in one turn of the edge's
-- event loop (single Redis), or one call's buckets of one slot (Redis Cluster). The same
-- arithmetic as memory-limiter.ts, in microseconds on Redis's own clock.
--
-- KEYS         the buckets of every call, call after call. A token bucket's value is its TAT
--              (theoretical arrival time: the instant, in µs of Redis TIME, at which it is
--              full again); no key = a full bucket. An in-flight bucket is a sorted set of
--              leases: member = lease id, score = the µs at which it expires unless renewed
--              (a lease whose edge died is dropped once past it); no key = no slot held.
-- ARGV         per call, in the same order:
--                mode   'take' takes one token (one slot) from each of its buckets if every one
--                       has one, else none; 'refund' gives back what a 'take' of the same lease
--                       took (a call denied by a bucket in another cluster slot; a released
--                       lease: its in-flight buckets only); 'renew' pushes its slots' expiry on
--                n      the call's number of buckets (its next n KEYS)
--                lease  the call's lease id (its slots' member; '' when it has none)
--                ttl    the lease time in µs (a slot taken or renewed expires that long after)
--                then per bucket: capacity (tokens or slots), period in µs (the time an empty
--                bucket takes to refill completely; 0 for an in-flight bucket)
--
-- Returns, per call: allowed (1/0), then per bucket: remaining, ms to next token, ms to a
-- token; integers (an in-flight bucket: free slots, and SLOT_RETRY_MS when none is free).
-- Each call sees what the calls before it took. Every token bucket written gets a PX TTL
-- that ends when it would be full again; a slot set's ends with its latest lease.

local EPS = 1e-6 -- token-count slack for float rounding, as TOKEN_EPSILON in memory-limiter.ts
local SLOT_RETRY_MS = 1000 -- as in types.ts
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local tat = {} -- key -> TAT as the calls so far leave it
local changed = {} -- token-bucket keys to write back at the end
local function current(key)
  local v = tat[key]
  if v == nil then
    local stored = redis.call('GET', key)
    v = stored and tonumber(stored) or now
    if v < now then v = now end
    tat[key] = v
  end
  return v
end

local held = {} -- slot-set key -> slots held as the calls so far leave it
local function slots(key)
  local v = held[key]
  if v == nil then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now) -- leases nobody renewed: their edge is gone
    v = redis.call('ZCARD', key)
    held[key] = v
  end
  return v
end

local out = {}
local k, a = 0, 1 -- cursors in KEYS and ARGV
while a <= #ARGV do
  local mode = ARGV[a]
  local refund, renew = mode == 'refund', mode == 'renew'
  local n = tonumber(ARGV[a + 1])
  local lease = ARGV[a + 2]
  local ttl = tonumber(ARGV[a + 3])
  a = a + 4
  local cap, interval = {}, {}
  local after = {} -- key -> TAT (or slots held) if this call goes through (a key named twice is charged twice)
  local allowed = 1
  for i = 1, n do
    local key = KEYS[k + i]
    cap[i] = tonumber(ARGV[a])
    local period = tonumber(ARGV[a + 1])
    a = a + 2
    if period == 0 then
      interval[i] = false -- in flight
      if not (refund or renew) then
        local cur = after[key] or slots(key)
        if cur >= cap[i] then allowed = 0 end
        after[key] = cur + 1
      end
    else
      interval[i] = period / cap[i]
      if not renew then
        local cur = after[key] or current(key)
        if refund then
          after[key] = math.max(cur - interval[i], now)
        else
          if cap[i] - (cur - now) / interval[i] < 1 - EPS then allowed = 0 end
          after[key] = cur + interval[i]
        end
      end
    end
  end
  for i = 1, n do -- the call's slots, written at once (a script's writes are atomic anyway)
    local key = KEYS[k + i]
    if interval[i] == false then
      if renew then
        redis.call('ZADD', key, 'XX', now + ttl, lease)
        redis.call('PEXPIRE', key, math.ceil(ttl / 1000))
      elseif refund then
        local h = slots(key)
        held[key] = h - redis.call('ZREM', key, lease)
      elseif allowed == 1 and after[key] ~= nil then
        redis.call('ZADD', key, now + ttl, lease)
        redis.call('PEXPIRE', key, math.ceil(ttl / 1000))
        held[key] = after[key]
        after[key] = nil
      end
    end
  end
  if refund or (allowed == 1 and not renew) then
    for key, v in pairs(after) do
      tat[key] = v
      changed[key] = true
    end
  end -- denied: nothing taken, the buckets are reported as they are

  out[#out + 1] = allowed
  for i = 1, n do
    local key = KEYS[k + i]
    if interval[i] == false then
      local remaining = math.max(0, cap[i] - (held[key] or slots(key)))
      local wait = 0
      if remaining < 1 then wait = SLOT_RETRY_MS end
      out[#out + 1] = remaining
      out[#out + 1] = wait
      out[#out + 1] = wait
    else
      local tokens = cap[i] - ((tat[key] or current(key)) - now) / interval[i]
      local remaining = math.max(0, math.min(cap[i], math.floor(tokens + EPS)))
      local toNext, toToken = 0, 0
      if remaining < cap[i] then toNext = math.ceil((remaining + 1 - tokens) * interval[i] / 1000 - EPS) end
      if remaining < 1 then toToken = math.ceil((1 - tokens) * interval[i] / 1000 - EPS) end
      out[#out + 1] = remaining
      out[#out + 1] = math.max(0, toNext)
      out[#out + 1] = math.max(0, toToken)
    end
  end
  k = k + n
end

for key in pairs(changed) do
  local v = tat[key]
  if v <= now then
    redis.call('DEL', key) -- full again: nothing to remember
  else
    -- %.17g keeps every bit of the double (tostring would round to 14 digits)
    redis.call('SET', key, string.format('%.17g', v), 'PX', math.ceil((v - now) / 1000))
  end
end
return out
