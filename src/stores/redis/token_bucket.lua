-- Token buckets, each checked and updated in one atomic step. One call takes all of a request's
-- buckets (distinct keys), read against one reading of the clock; for each, the steps are the
-- design document's.
-- KEYS[i] the i-th bucket, e.g. rl:key:ak_abc123
-- ARGV[4i-3 .. 4i] its capacity, tokens added per period, period in ms, cost of this request
-- A negative cost gives tokens back (a refund); min() keeps the bucket at most full.
-- ARGV[4n+1], when present, has one flag per bucket. A '1' makes the call all-or-nothing: a
-- rejection by that bucket charges no bucket; then nothing is written and each reply's tokens are
-- untouched. A 'u' takes up to the cost: as many whole tokens as the bucket holds (cost >= 0).
-- Returns allowed (for a 'u' bucket: the tokens taken), floor(tokens), retry_ms for each bucket
-- in turn; a 'u' bucket that had nothing waits retry_ms for one token.
-- token_bucket.cc mirrors this arithmetic.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms

-- Bucket i after taking `cost`, or up to it: allowed (or the tokens taken), tokens, retry_ms, ms
-- until full again. Writes nothing.
local function take(i, cost, up_to)
  local a = 4 * (i - 1)
  local capacity = tonumber(ARGV[a + 1])
  local per_ms = tonumber(ARGV[a + 2]) / tonumber(ARGV[a + 3])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'ts')
  local tokens = tonumber(state[1]) or capacity -- no key: a full bucket
  local ts = tonumber(state[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_ms)
  local wanted = cost
  if up_to then cost = math.min(cost, math.max(0, math.floor(tokens))) end
  local allowed, retry_ms = 0, 0
  if tokens >= cost then
    tokens, allowed = math.min(capacity, tokens - cost), 1
  else
    retry_ms = math.ceil((cost - tokens) / per_ms) -- until enough tokens are back
  end
  if up_to then
    allowed = cost
    if cost == 0 and wanted > 0 then retry_ms = math.ceil((1 - tokens) / per_ms) end
  end
  -- Full by then, so no key means the same; a full bucket (0) is deleted at once.
  return allowed, tokens, retry_ms, math.ceil((capacity - tokens) / per_ms)
end

local flags = ARGV[4 * #KEYS + 1] or ''
local taken, charge = {}, true
for i = 1, #KEYS do
  taken[i] = {take(i, tonumber(ARGV[4 * i]), flags:sub(i, i) == 'u')}
  if taken[i][1] == 0 and flags:sub(i, i) == '1' then charge = false end
end
local reply = {}
for i, key in ipairs(KEYS) do
  local allowed, tokens, retry_ms, ttl = unpack(taken[i])
  if charge then
    redis.call('HSET', key, 'tokens', tokens, 'ts', now)
    redis.call('PEXPIRE', key, ttl)
  else
    tokens = select(2, take(i, 0)) -- nothing charged: what the bucket holds
  end
  reply[3 * i - 2], reply[3 * i - 1], reply[3 * i] = allowed, math.floor(tokens), retry_ms
end
return reply
