
-- The compact layout (`layout: compact`): one string with an expiry, set in one command, about
-- 30 bytes a bucket less than the hash.
local read = taking_over(packed_state, hash_state)

-- Full by the expiry, so no key means the same; a full bucket is no key.
local function write(key, state, capacity, rate, period)
  local ttl = refill_ms(state, capacity, rate, period)
  if ttl <= 0 then return redis.call('DEL', key) end
  redis.call('SET', key, struct.pack('<dd', state[1], state[2]), 'PX', ttl)
end

