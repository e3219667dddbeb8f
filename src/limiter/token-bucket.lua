-- GCRA token buckets, decided together: one call of RedisLimiter for the buckets of one slot.
-- The same arithmetic as memory-limiter.ts, in microseconds on Redis's own clock.
--
-- KEYS[i]      bucket i's key; its value is the bucket's TAT (theoretical arrival time: the
--              instant, in µs of Redis TIME, at which it is full again). No key = a full bucket.
-- ARGV[1]      mode: 'take' takes one token from every bucket if every bucket has one, else none;
--              'refund' gives one token back to every bucket (undoes a 'take' whose call was
--              denied by a bucket in another cluster slot)
-- ARGV[2i]     capacity of bucket i (tokens)
-- ARGV[2i+1]   period of bucket i in µs (the time an empty bucket takes to refill completely)
--
-- Returns { allowed (1/0), then per bucket: remaining, ms to next token, ms to a token }, integers.
-- Every written key gets a PX TTL that ends when its bucket would be full again.

local EPS = 1e-6 -- token-count slack for float rounding, as TOKEN_EPSILON in memory-limiter.ts
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local refund = ARGV[1] == 'refund'
local n = #KEYS

local tat = {} -- key -> TAT as this call leaves it, so a key named twice is charged twice
local function current(key)
  local v = tat[key]
  if v == nil then
    local stored = redis.call('GET', key)
    v = stored and tonumber(stored) or now
    if v < now then v = now end
  end
  return v
end

local cap, interval = {}, {}
local allowed = 1
local before = {}
for i = 1, n do
  local key = KEYS[i]
  cap[i] = tonumber(ARGV[2 * i])
  interval[i] = tonumber(ARGV[2 * i + 1]) / cap[i]
  local cur = current(key)
  before[key] = before[key] or cur
  if refund then
    tat[key] = math.max(cur - interval[i], now)
  else
    if cap[i] - (cur - now) / interval[i] < 1 - EPS then allowed = 0 end
    tat[key] = cur + interval[i]
  end
end

if refund or allowed == 1 then
  for key, v in pairs(tat) do
    if v <= now then
      redis.call('DEL', key) -- full again: nothing to remember
    else
      -- %.17g keeps every bit of the double (tostring would round to 14 digits)
      redis.call('SET', key, string.format('%.17g', v), 'PX', math.ceil((v - now) / 1000))
    end
  end
else
  tat = before -- denied: nothing taken, report the buckets as they are
end

local out = { allowed }
for i = 1, n do
  local tokens = cap[i] - (tat[KEYS[i]] - now) / interval[i]
  local remaining = math.max(0, math.min(cap[i], math.floor(tokens + EPS)))
  local toNext, toToken = 0, 0
  if remaining < cap[i] then toNext = math.ceil((remaining + 1 - tokens) * interval[i] / 1000 - EPS) end
  if remaining < 1 then toToken = math.ceil((1 - tokens) * interval[i] / 1000 - EPS) end
  out[#out + 1] = remaining
  out[#out + 1] = math.max(0, toNext)
  out[#out + 1] = math.max(0, toToken)
end
return out
