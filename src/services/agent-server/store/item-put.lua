-- Stores one item and counts it, unless that takes the server or its owner
-- past a limit (then nothing is written). The counts are those of
-- item-quota.ts: every write and delete of the item store goes through this
-- script or item-delete.lua, so they never drift from the items.
--
-- KEYS[1]  values:<ns>   hash key -> JSON {value, updated_at}
-- KEYS[2]  created:<ns>  hash key -> ISO time of the first put
-- KEYS[3]  namespaces    sorted set of namespaces holding items
-- KEYS[4]  sizes:<ns>    hash key -> "<bytes> <owner>" (owner '' = nobody)
-- KEYS[5]  usage         hash: items, bytes, items:<owner>, bytes:<owner>
-- ARGV[1]  key
-- ARGV[2]  namespace as JSON (the member of KEYS[3])
-- ARGV[3]  the stored JSON
-- ARGV[4]  now, ISO
-- ARGV[5]  the value's bytes
-- ARGV[6]  owner ('' = nobody: counted for the server only)
-- ARGV[7]  most items on the server (-1 = no limit)
-- ARGV[8]  most bytes on the server (-1 = no limit)
-- ARGV[9]  most items of the owner (-1 = no limit)
-- ARGV[10] most bytes of the owner (-1 = no limit)
-- KEYS[6]  expiry        sorted set JSON [ns, key] -> when it expires (ms)
-- KEYS[7]  ttls          hash JSON [ns, key] -> its TTL (ms), to refresh it
-- ARGV[11] the item as JSON [ns, key] (the member of KEYS[6] and KEYS[7])
-- ARGV[12] its TTL in ms ('' = none: any earlier TTL is dropped)
-- ARGV[13] now, ms
-- Returns 0 when stored, else {limit name, in use, limit}.
local key, owner, bytes = ARGV[1], ARGV[6], tonumber(ARGV[5])
local old = redis.call('HGET', KEYS[4], key)
local oldBytes, oldOwner = 0, nil
if old then
  local sep = string.find(old, ' ', 1, true)
  oldBytes, oldOwner = tonumber(string.sub(old, 1, sep - 1)), string.sub(old, sep + 1)
end
local function used(field) return tonumber(redis.call('HGET', KEYS[5], field) or '0') end
-- Over when past the limit and growing: a put that grows nothing always passes.
local function over(limit, before, after)
  local max = tonumber(limit)
  return max >= 0 and after > max and after > before
end

local items, total = used('items'), used('bytes')
if over(ARGV[7], items, items + (old and 0 or 1)) then return {'store_items', items, ARGV[7]} end
if over(ARGV[8], total, total - oldBytes + bytes) then return {'store_bytes', total, ARGV[8]} end
if owner ~= '' then
  local same = old ~= false and oldOwner == owner
  local mine, mineBytes = used('items:' .. owner), used('bytes:' .. owner)
  if over(ARGV[9], mine, mine + (same and 0 or 1)) then return {'store_items_per_user', mine, ARGV[9]} end
  local after = mineBytes - (same and oldBytes or 0) + bytes
  if over(ARGV[10], mineBytes, after) then return {'store_bytes_per_user', mineBytes, ARGV[10]} end
end

redis.call('HSET', KEYS[1], key, ARGV[3])
redis.call('HSETNX', KEYS[2], key, ARGV[4])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
redis.call('HSET', KEYS[4], key, bytes .. ' ' .. owner)
if ARGV[12] ~= '' then
  redis.call('ZADD', KEYS[6], tonumber(ARGV[13]) + tonumber(ARGV[12]), ARGV[11])
  redis.call('HSET', KEYS[7], ARGV[11], ARGV[12])
else
  redis.call('ZREM', KEYS[6], ARGV[11])
  redis.call('HDEL', KEYS[7], ARGV[11])
end
-- The old item leaves its counts, the new one joins its own.
if old then
  redis.call('HINCRBY', KEYS[5], 'items', -1)
  redis.call('HINCRBY', KEYS[5], 'bytes', -oldBytes)
  if oldOwner ~= '' and redis.call('HINCRBY', KEYS[5], 'items:' .. oldOwner, -1) <= 0 then
    redis.call('HDEL', KEYS[5], 'items:' .. oldOwner, 'bytes:' .. oldOwner)
  elseif oldOwner ~= '' then
    redis.call('HINCRBY', KEYS[5], 'bytes:' .. oldOwner, -oldBytes)
  end
end
redis.call('HINCRBY', KEYS[5], 'items', 1)
redis.call('HINCRBY', KEYS[5], 'bytes', bytes)
if owner ~= '' then
  redis.call('HINCRBY', KEYS[5], 'items:' .. owner, 1)
  redis.call('HINCRBY', KEYS[5], 'bytes:' .. owner, bytes)
end
return 0
