-- GCRA, the generic cell rate algorithm: one number per key, the theoretical arrival time
-- (TAT) at which the bucket is full again, as redis-cell's CL.THROTTLE keeps it. For the same
-- limit it decides as the token bucket does: tokens = capacity - (tat - now) / interval.
-- calls.lua, appended to this file, runs the call; these are the algorithm's steps.
-- An op's numbers are the bucket's capacity, tokens added per period, period in ms, and the cost
-- (negative: a refund, never past full).
-- gcra.cc mirrors this arithmetic.

-- The TAT as stored ({} for no key), or nil and the server's error when the key holds a hash.
local function read(key)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'table' then return nil, stored end
  return {tonumber(stored)}
end

-- The bucket after taking `cost` at `now`: allowed, the new state, whole tokens left, retry_ms,
-- and ms until full. Writes nothing.
local function take(state, capacity, rate, period, cost, _, now)
  local interval = period / rate -- ms per token
  local burst = capacity * interval
  -- The TAT gathers one rounding per request; a billionth of a token of slack keeps answers
  -- that are whole numbers exactly (5 tokens, not 4.9999999999999991) whole.
  local slack = interval * 1e-9
  -- No key: full. A TAT past now + burst (the clock stepped back) is empty, no emptier.
  local tat = math.min(math.max(state[1] or now, now), now + burst)
  local next_tat = math.max(now, tat + cost * interval)
  local allowed, retry_ms = 0, 0
  if next_tat - now <= burst + slack then
    tat, allowed = next_tat, 1
  else
    retry_ms = math.ceil(next_tat - now - burst - slack) -- until there is room for the cost
  end
  return allowed, {tat}, math.floor(capacity - (tat - now) / interval + 1e-9), retry_ms,
    math.max(0, math.ceil(tat - now))
end

-- Full at the TAT, so the key lives until then; a full bucket is no key.
local function write(key, state, _, _, _, now)
  local tat = state[1]
  local ttl = math.ceil(tat - now)
  if ttl > 0 then
    redis.call('SET', key, tat, 'PX', ttl)
  else
    redis.call('DEL', key)
  end
end
