-- Token buckets, each checked and updated in one atomic step. One call takes all of a request's
-- buckets, read against one reading of the clock; for each, the steps are the design document's.
-- KEYS[i] the i-th bucket, e.g. rl:key:ak_abc123
-- ARGV[4i-3 .. 4i] its capacity, tokens added per period, period in ms, cost of this request
-- A negative cost gives tokens back (a refund); min() keeps the bucket at most full.
-- Returns allowed, floor(tokens), retry_ms for each bucket in turn.
-- token_bucket.cc mirrors this arithmetic.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms
local reply = {}
for i, key in ipairs(KEYS) do
  local a = 4 * (i - 1)
  local capacity = tonumber(ARGV[a + 1])
  local per_ms = tonumber(ARGV[a + 2]) / tonumber(ARGV[a + 3])
  local cost = tonumber(ARGV[a + 4])
  local state = redis.call('HMGET', key, 'tokens', 'ts')
  local tokens = tonumber(state[1]) or capacity -- no key: a full bucket
  local ts = tonumber(state[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_ms)
  local allowed, retry_ms = 0, 0
  if tokens >= cost then
    tokens, allowed = math.min(capacity, tokens - cost), 1
  else
    retry_ms = math.ceil((cost - tokens) / per_ms) -- until enough tokens are back
  end
  redis.call('HSET', key, 'tokens', tokens, 'ts', now)
  -- Full by then, so no key means the same; a full bucket (0) is deleted at once.
  redis.call('PEXPIRE', key, math.ceil((capacity - tokens) / per_ms))
  reply[3 * i - 2], reply[3 * i - 1], reply[3 * i] = allowed, math.floor(tokens), retry_ms
end
return reply
