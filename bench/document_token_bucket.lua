-- The token bucket script of the design (docs/design.md), kept as it was specified: the baseline
-- bench/script_cost measures Sluice's scripts against (redis-benchmark runs it, one check a call).
-- One token bucket, checked and updated in one atomic step.
-- KEYS[1] the bucket, e.g. rl:key:ak_abc123
-- ARGV capacity, tokens added per period, period in ms, cost of this request
local capacity = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2]) / tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity -- no key: a full bucket
local ts = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_ms)
local allowed, retry_ms = 0, 0
if tokens >= cost then
tokens, allowed = tokens - cost, 1
else
retry_ms = math.ceil((cost - tokens) / per_ms) -- until enough tokens are back
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / per_ms)) -- full by then, so no key means the same
return {allowed, math.floor(tokens), retry_ms}
