-- Removes one item and its counts (item-put.lua), and its namespace from the
-- index once the namespace holds nothing, in one step (a concurrent put is
-- never unindexed, a count never kept for a gone item).
--
-- KEYS[1]  values:<ns>
-- KEYS[2]  created:<ns>
-- KEYS[3]  namespaces
-- KEYS[4]  sizes:<ns>
-- KEYS[5]  usage
-- ARGV[1]  key
-- ARGV[2]  namespace as JSON
-- KEYS[6]  expiry (item-put.lua)
-- KEYS[7]  ttls
-- ARGV[3]  the item as JSON [ns, key]
-- ARGV[4]  for a sweep: now (ms), the item is removed only if it expired by then ('' = remove it anyway)
-- Returns 1, or 0 when a sweep found the item refreshed or replaced since.
local key = ARGV[1]
if ARGV[4] ~= '' then
  local at = redis.call('ZSCORE', KEYS[6], ARGV[3])
  if not at or tonumber(at) > tonumber(ARGV[4]) then return 0 end
end
redis.call('ZREM', KEYS[6], ARGV[3])
redis.call('HDEL', KEYS[7], ARGV[3])
local old = redis.call('HGET', KEYS[4], key)
if old then
  local sep = string.find(old, ' ', 1, true)
  local bytes, owner = tonumber(string.sub(old, 1, sep - 1)), string.sub(old, sep + 1)
  local left = redis.call('HINCRBY', KEYS[5], 'items', -1)
  redis.call('HINCRBY', KEYS[5], 'bytes', -bytes)
  if owner ~= '' and redis.call('HINCRBY', KEYS[5], 'items:' .. owner, -1) <= 0 then
    redis.call('HDEL', KEYS[5], 'items:' .. owner, 'bytes:' .. owner)
  elseif owner ~= '' then
    redis.call('HINCRBY', KEYS[5], 'bytes:' .. owner, -bytes)
  end
  -- Nothing counted any more: no key left behind.
  if left <= 0 then redis.call('DEL', KEYS[5]) end
  redis.call('HDEL', KEYS[4], key)
end
redis.call('HDEL', KEYS[1], key)
redis.call('HDEL', KEYS[2], key)
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('ZREM', KEYS[3], ARGV[2]) end
return 1
