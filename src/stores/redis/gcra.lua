-- GCRA, the generic cell rate algorithm: one number per key, the theoretical arrival time
-- (TAT) at which the bucket is full again, as redis-cell's CL.THROTTLE keeps it. For the same
-- limit it decides as the token bucket does: tokens = capacity - (tat - now) / interval.
-- KEYS[i] the i-th bucket (distinct keys); ARGV[4i-3 .. 4i] its capacity, tokens added per
-- period, period in ms, cost of this request (negative: a refund, never past full).
-- ARGV[4n+1], when present, makes the call all-or-nothing: a '1' at position i means a rejection
-- by bucket i charges no bucket; then nothing is written and each reply's tokens are untouched.
-- Returns allowed, remaining tokens (rounded down), retry_ms for each bucket in turn.
-- gcra.cc mirrors this arithmetic.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms

-- Bucket i after taking `cost`: allowed, its TAT, retry_ms, remaining. Writes nothing.
local function take(i, cost)
  local a = 4 * (i - 1)
  local capacity = tonumber(ARGV[a + 1])
  local interval = tonumber(ARGV[a + 3]) / tonumber(ARGV[a + 2]) -- ms per token
  local burst = capacity * interval
  -- The TAT gathers one rounding per request; a billionth of a token of slack keeps answers
  -- that are whole numbers exactly (5 tokens, not 4.9999999999999991) whole.
  local slack = interval * 1e-9
  -- No key: full. A TAT past now + burst (the clock stepped back) is empty, no emptier.
  local tat = math.min(math.max(tonumber(redis.call('GET', KEYS[i])) or now, now), now + burst)
  local next_tat = math.max(now, tat + cost * interval)
  local allowed, retry_ms = 0, 0
  if next_tat - now <= burst + slack then
    tat, allowed = next_tat, 1
  else
    retry_ms = math.ceil(next_tat - now - burst - slack) -- until there is room for the cost
  end
  return allowed, tat, retry_ms, math.floor(capacity - (tat - now) / interval + 1e-9)
end

local flags = ARGV[4 * #KEYS + 1] or ''
local taken, charge = {}, true
for i = 1, #KEYS do
  taken[i] = {take(i, tonumber(ARGV[4 * i]))}
  if taken[i][1] == 0 and flags:sub(i, i) == '1' then charge = false end
end
local reply = {}
for i, key in ipairs(KEYS) do
  local allowed, tat, retry_ms, remaining = unpack(taken[i])
  if charge then
    local ttl = math.ceil(tat - now) -- full by then; a full bucket is no key
    if ttl > 0 then
      redis.call('SET', key, tat, 'PX', ttl)
    else
      redis.call('DEL', key)
    end
  else
    remaining = select(4, take(i, 0)) -- nothing charged: what the bucket holds
  end
  reply[3 * i - 2], reply[3 * i - 1], reply[3 * i] = allowed, remaining, retry_ms
end
return reply
