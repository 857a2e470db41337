-- Token buckets: a bucket is its tokens and the time (ms) they were counted, and expires when
-- it would be full again, so that no key means a full bucket. This file holds the algorithm's
-- arithmetic, docs/design.md's; a layout file appended to it reads and writes the bucket
-- (token_bucket_hash.lua, the design's hash; token_bucket_compact.lua, one packed string),
-- and calls.lua, appended last, runs the call.
-- An op's numbers are the bucket's capacity, tokens added per period, period in ms, and the cost
-- (negative: a refund, never past full). An up-to op (mode 'u') takes as many whole tokens as
-- the bucket holds, up to the cost, and answers how many; when none, retry_ms is the wait for
-- one. A debt op (mode 'd') takes the whole cost even past empty, owing at most one period's
-- tokens, and is allowed when the bucket is not in debt afterwards; a bucket in debt refuses
-- every other op until it has refilled past empty. token_bucket.cc mirrors this arithmetic.
local floor, ceil, min, max = math.floor, math.ceil, math.min, math.max

-- The bucket after taking `cost` (or up to it, or into debt) at `now`: allowed (for up-to, the
-- tokens taken), the new state, whole tokens left, retry_ms, and ms until full. Writes nothing.
local function take(state, capacity, rate, period, cost, mode, now)
  local per_ms = rate / period
  local tokens = state[1] or capacity -- no key: a full bucket
  local ts = state[2] or now
  tokens = min(capacity, tokens + max(0, now - ts) * per_ms)
  local wanted = cost
  if mode == 'u' then cost = min(cost, max(0, floor(tokens))) end
  local allowed, retry_ms = 0, 0
  if mode == 'd' then
    tokens = min(capacity, max(tokens - cost, -rate))
    if tokens >= 0 then allowed = 1 else retry_ms = ceil(-tokens / per_ms) end
  elseif tokens >= cost then
    tokens, allowed = min(capacity, tokens - cost), 1
  else
    retry_ms = ceil((cost - tokens) / per_ms) -- until enough tokens are back
  end
  if mode == 'u' then
    allowed = cost
    if cost == 0 and wanted > 0 then retry_ms = ceil((1 - tokens) / per_ms) end
  end
  return allowed, {tokens, now}, max(0, floor(tokens)), retry_ms,
    max(0, ceil((capacity - tokens) / per_ms))
end

-- The bucket in the design's layout, a hash of tokens and ts ({} for no key); or nil and the
-- server's error when the key holds another type.
local function hash_state(key)
  local stored = redis.pcall('HMGET', key, 'tokens', 'ts')
  if stored.err then return nil, stored end
  return {tonumber(stored[1]), tonumber(stored[2])}
end

-- The bucket in the compact layout, one string of the two numbers packed as little-endian
-- doubles (16 bytes, exact: no decimal conversion either way); as hash_state answers.
local function packed_state(key)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'table' then return nil, stored end
  if not stored then return {} end
  if #stored ~= 16 then return nil, {err = 'ERR ' .. key .. ' holds no token bucket'} end
  local tokens, ts = struct.unpack('<dd', stored)
  return {tokens, ts}
end

-- A layout's read(): `own` reads the bucket, and `other` reads one the other layout left (the
-- layout was switched), which the write then replaces, so that no count is lost.
local function taking_over(own, other)
  return function(key)
    local state, failure = own(key)
    if state or not failure.err:find('^WRONGTYPE') then return state, failure end
    return other(key)
  end
end

-- ms until the bucket is full again: its key's time to live.
local function refill_ms(state, capacity, rate, period)
  return ceil((capacity - state[1]) / (rate / period))
end
