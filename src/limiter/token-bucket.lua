-- GCRA token buckets for a batch of calls, decided one after the other in one atomic script:
-- every call of RedisLimiter made in one turn of the edge's event loop (single Redis), or
-- one call's buckets of one slot (Redis Cluster). The same arithmetic as memory-limiter.ts,
-- in microseconds on Redis's own clock.
--
-- KEYS         the buckets of every call, call after call. A key's value is the bucket's TAT
--              (theoretical arrival time: the instant, in µs of Redis TIME, at which it is
--              full again). No key = a full bucket.
-- ARGV         per call, in the same order:
--                mode   'take' takes one token from each of its buckets if every one has a
--                       token, else none; 'refund' gives one token back to each (undoes a
--                       'take' whose call was denied by a bucket in another cluster slot)
--                n      the call's number of buckets (its next n KEYS)
--                then per bucket: capacity (tokens), period in µs (the time an empty bucket
--                takes to refill completely)
--
-- Returns, per call: allowed (1/0), then per bucket: remaining, ms to next token, ms to a
-- token; integers. Each call sees what the calls before it took. Every key written gets a
-- PX TTL that ends when its bucket would be full again.

local EPS = 1e-6 -- token-count slack for float rounding, as TOKEN_EPSILON in memory-limiter.ts
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local tat = {} -- key -> TAT as the calls so far leave it
local changed = {} -- keys to write back at the end
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

local out = {}
local k, a = 0, 1 -- cursors in KEYS and ARGV
while a <= #ARGV do
  local refund = ARGV[a] == 'refund'
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  local cap, interval = {}, {}
  local after = {} -- key -> TAT if this call goes through (a key named twice is charged twice)
  local allowed = 1
  for i = 1, n do
    local key = KEYS[k + i]
    cap[i] = tonumber(ARGV[a])
    interval[i] = tonumber(ARGV[a + 1]) / cap[i]
    a = a + 2
    local cur = after[key] or current(key)
    if refund then
      after[key] = math.max(cur - interval[i], now)
    else
      if cap[i] - (cur - now) / interval[i] < 1 - EPS then allowed = 0 end
      after[key] = cur + interval[i]
    end
  end
  if refund or allowed == 1 then
    for key, v in pairs(after) do
      tat[key] = v
      changed[key] = true
    end
  end -- denied: nothing taken, the buckets are reported as they are

  out[#out + 1] = allowed
  for i = 1, n do
    local tokens = cap[i] - (tat[KEYS[k + i]] - now) / interval[i]
    local remaining = math.max(0, math.min(cap[i], math.floor(tokens + EPS)))
    local toNext, toToken = 0, 0
    if remaining < cap[i] then toNext = math.ceil((remaining + 1 - tokens) * interval[i] / 1000 - EPS) end
    if remaining < 1 then toToken = math.ceil((1 - tokens) * interval[i] / 1000 - EPS) end
    out[#out + 1] = remaining
    out[#out + 1] = math.max(0, toNext)
    out[#out + 1] = math.max(0, toToken)
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
