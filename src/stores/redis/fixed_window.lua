-- Fixed windows: a count per key of the requests in the current window, kept with INCRBY and an
-- expiry in one atomic step, the counter the design document says memcached could keep. Windows
-- are aligned to Redis's clock (a one-minute window starts on the minute) and a key expires at
-- its window's end (SET ... PXAT on the window's first count, INCRBY after).
-- KEYS[i] the i-th counter (distinct keys); ARGV[4i-3 .. 4i] the most requests per window, the
-- same number again (a window has no refill rate), the window in ms, the cost of this request
-- (negative: a refund, never below zero).
-- ARGV[4n+1], when present, makes the call all-or-nothing: a '1' at position i means a rejection
-- by counter i charges no counter; then nothing is written and each reply's count is untouched.
-- Returns allowed, what is left of the window's allowance, retry_ms for each counter in turn.
-- fixed_window.cc mirrors this arithmetic.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms

-- Counter i after counting `cost`: allowed, the count, retry_ms, the window's end, the count
-- before, and whether the window has no key yet. Writes nothing.
local function take(i, cost)
  local a = 4 * (i - 1)
  local capacity = tonumber(ARGV[a + 1])
  local period = tonumber(ARGV[a + 3])
  local window_end = now - now % period + period
  local before = tonumber(redis.call('GET', KEYS[i]))
  -- Redis drops a key only once its clock has passed the expiry, so a read in the very
  -- millisecond a window ends still sees the ended window's key: it counts nothing.
  if before and redis.call('PEXPIRETIME', KEYS[i]) <= now then before = nil end
  local fresh = before == nil
  before = before or 0
  local count, allowed, retry_ms = before, 0, 0
  if before + cost <= capacity then
    count, allowed = math.max(0, before + cost), 1
  else
    retry_ms = window_end - now -- the next window starts empty
  end
  return allowed, count, retry_ms, window_end, before, fresh
end

local flags = ARGV[4 * #KEYS + 1] or ''
local taken, charge = {}, true
for i = 1, #KEYS do
  taken[i] = {take(i, tonumber(ARGV[4 * i]))}
  if taken[i][1] == 0 and flags:sub(i, i) == '1' then charge = false end
end
local reply = {}
for i, key in ipairs(KEYS) do
  local allowed, count, retry_ms, window_end, before, fresh = unpack(taken[i])
  if not charge then
    count = before -- nothing charged
  elseif count ~= before then
    if count == 0 then -- refunded to nothing: no key, as before any count
      redis.call('DEL', key)
    elseif fresh then -- the window's first count
      redis.call('SET', key, count, 'PXAT', window_end)
    else -- INCRBY keeps the key's expiry
      redis.call('INCRBY', key, count - before)
    end
  end
  reply[3 * i - 2], reply[3 * i - 1], reply[3 * i] =
    allowed, tonumber(ARGV[4 * i - 3]) - count, retry_ms
end
return reply
