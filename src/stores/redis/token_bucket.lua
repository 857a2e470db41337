-- Token buckets: a bucket is a hash of its tokens and the time (ms) they were counted, and
-- expires when it would be full again, so that no key means a full bucket. calls.lua, appended
-- to this file, runs the call; these are the algorithm's steps, the design document's.
-- An op's numbers are the bucket's capacity, tokens added per period, period in ms, and the cost
-- (negative: a refund, never past full). An up-to op (mode 'u') takes as many whole tokens as
-- the bucket holds, up to the cost, and answers how many; when none, retry_ms is the wait for
-- one. A debt op (mode 'd') takes the whole cost even past empty, owing at most one period's
-- tokens, and is allowed when the bucket is not in debt afterwards; a bucket in debt refuses
-- every other op until it has refilled past empty. token_bucket.cc mirrors this arithmetic.

-- The bucket as stored (tokens, ts; nil for no key), or nil and the server's error when the key
-- holds something else.
local function read(key)
  local stored = redis.pcall('HMGET', key, 'tokens', 'ts')
  if stored.err then return nil, stored end
  return stored
end

-- The bucket after taking `cost` (or up to it, or into debt) at `now`: allowed (for up-to, the
-- tokens taken), the new state, whole tokens left, retry_ms, and ms until full. Writes nothing.
local function take(state, capacity, rate, period, cost, mode, now)
  local per_ms = rate / period
  local tokens = tonumber(state[1]) or capacity -- no key: a full bucket
  local ts = tonumber(state[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_ms)
  local wanted = cost
  if mode == 'u' then cost = math.min(cost, math.max(0, math.floor(tokens))) end
  local allowed, retry_ms = 0, 0
  if mode == 'd' then
    tokens = math.min(capacity, math.max(tokens - cost, -rate))
    if tokens >= 0 then allowed = 1 else retry_ms = math.ceil(-tokens / per_ms) end
  elseif tokens >= cost then
    tokens, allowed = math.min(capacity, tokens - cost), 1
  else
    retry_ms = math.ceil((cost - tokens) / per_ms) -- until enough tokens are back
  end
  if mode == 'u' then
    allowed = cost
    if cost == 0 and wanted > 0 then retry_ms = math.ceil((1 - tokens) / per_ms) end
  end
  return allowed, {tokens, now}, math.max(0, math.floor(tokens)), retry_ms,
    math.max(0, math.ceil((capacity - tokens) / per_ms))
end

-- Full by the expiry, so no key means the same; a full bucket (expiry 0) is deleted at once.
local function write(key, state, capacity, rate, period)
  redis.call('HSET', key, 'tokens', state[1], 'ts', state[2])
  redis.call('PEXPIRE', key, math.ceil((capacity - state[1]) / (rate / period)))
end
