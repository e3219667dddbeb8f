-- Starts the TTL of each item (those that have one and have not expired) again from now (item-put.lua).
--
-- KEYS[1]  expiry
-- KEYS[2]  ttls
-- ARGV[1]  now, ms
-- ARGV[2..] the items as JSON [ns, key]
local now = tonumber(ARGV[1])
for i = 2, #ARGV do
  local ttl = redis.call('HGET', KEYS[2], ARGV[i])
  local at = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if ttl and at and tonumber(at) > now then redis.call('ZADD', KEYS[1], now + tonumber(ttl), ARGV[i]) end
end
return 0
