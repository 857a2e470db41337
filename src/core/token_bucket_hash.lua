
-- The design's layout (docs/design.md): a hash of tokens and ts with an expiry.
local read = taking_over(hash_state, packed_state)

-- Full by the expiry, so no key means the same; a full bucket (expiry 0) is deleted at once.
local function write(key, state, capacity, rate, period)
  local stored = redis.pcall('HSET', key, 'tokens', state[1], 'ts', state[2])
  if type(stored) == 'table' then -- a compact bucket: HSET cannot change a key's type
    redis.call('DEL', key)
    redis.call('HSET', key, 'tokens', state[1], 'ts', state[2])
  end
  redis.call('PEXPIRE', key, refill_ms(state, capacity, rate, period))
end
