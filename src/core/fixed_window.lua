-- Fixed windows: a count per key of the requests in the current window, kept with INCRBY and an
-- expiry in one atomic step, the counter docs/design.md says memcached could keep. Windows are
-- aligned to Redis's clock (a one-minute window starts on the minute) and a key expires at
-- its window's end (SET ... PXAT on the window's first count, INCRBY after).
-- calls.lua, appended to this file, runs the call; these are the algorithm's steps.
-- An op's numbers are the most requests per window, the same number again (a window has no
-- refill rate), the window in ms, and the cost (negative: a refund, never below zero).
-- fixed_window.cc mirrors this arithmetic.

-- The window's count, what the key holds (both nil for no key) and, once counted, the window's
-- end; or nil and an error when the key holds a hash, or a string INCRBY could not count on.
local function read(key, now)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'table' then return nil, stored end
  if stored and not string.match(stored, '^%-?%d+$') then
    return nil, {err = 'ERR ' .. key .. ' holds no whole count'}
  end
  local count = tonumber(stored)
  -- Redis drops a key only once its clock has passed the expiry, so a read in the very
  -- millisecond a window ends still sees the ended window's key: it counts nothing.
  if count and redis.call('PEXPIRETIME', key) <= now then count = nil end
  return {count, count}
end

-- The counter after counting `cost` at `now`: allowed, the new state, what is left of the
-- window's allowance, retry_ms, and ms until the window's count is gone. Writes nothing.
local function take(state, capacity, _, period, cost, _, now)
  local before = state[1] or 0
  local to_end = period - now % period
  if before + cost <= capacity then
    local count = math.max(0, before + cost)
    -- The window is the one its first count was made in, as separate calls would set it.
    return 1, {count, state[2], state[3] or now + to_end}, capacity - count, 0,
      count > 0 and to_end or 0
  end
  return 0, state, capacity - before, to_end, before > 0 and to_end or 0 -- the next starts empty
end

-- INCRBY keeps the key's expiry; the window's first count sets it.
local function write(key, state)
  local count, stored, window_end = state[1] or 0, state[2], state[3]
  if count == (stored or 0) then return end
  if count == 0 then -- refunded to nothing: no key, as before any count
    redis.call('DEL', key)
  elseif stored == nil then -- the window's first count
    redis.call('SET', key, count, 'PXAT', window_end)
  else
    redis.call('INCRBY', key, count - stored)
  end
end
