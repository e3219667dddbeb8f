-- Compare-and-set of one JSON record, with the index changes that go with
-- it, in one atomic step. Used for every write of the control plane store.
--
-- KEYS[1]   the record
-- KEYS[2..] keys the ops below name by their position in KEYS
-- ARGV[1]   the record's value as the caller read it ('' = must not exist)
-- ARGV[2]   its new value ('' = delete it)
-- ARGV[3]   JSON list of ops, each [op, key position, args...]:
--             ["set", k, value] ["del", k] ["zadd", k, score, member]
--             ["zrem", k, member] ["sadd", k, member] ["srem", k, member]
--           and checks, all made before anything is written:
--             ["zcard-below", k, n]   the sorted set holds fewer than n members
-- Returns 1 when applied, 0 when the record changed since it was read,
-- -1 when a check failed (nothing written).
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
local ops = cjson.decode(ARGV[3])
for _, op in ipairs(ops) do
  if op[1] == 'zcard-below' and redis.call('ZCARD', KEYS[op[2]]) >= tonumber(op[3]) then return -1 end
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
for _, op in ipairs(ops) do
  local name, key = op[1], KEYS[op[2]]
  if name == 'set' then redis.call('SET', key, op[3])
  elseif name == 'del' then redis.call('DEL', key)
  elseif name == 'zadd' then redis.call('ZADD', key, op[3], op[4])
  elseif name == 'zrem' then redis.call('ZREM', key, op[3])
  elseif name == 'sadd' then redis.call('SADD', key, op[3])
  elseif name == 'srem' then redis.call('SREM', key, op[3])
  elseif name == 'zcard-below' then -- checked above
  else return redis.error_reply('cas.lua: unknown op ' .. tostring(name)) end
end
return 1
