
-- One call: the buckets of one or more checks, each check's atomic, decided in the order given
-- against one reading of Redis's clock. Appended to each algorithm's read, take and write.
-- KEYS[i] the i-th op's bucket; a key may come again in a later check of the call, never twice
-- in one check. ARGV[4i-3 .. 4i] the i-th op's four numbers.
-- ARGV[4n+1], when present, has a code per op ('0' plain, 'u' take up to the cost, 'd' take it
-- into debt, '1' this op's rejection charges none of its check), the checks' codes apart by
-- single spaces; absent, the call is one check of plain ops. A key is read at most once and written at most once, after
-- every check: a later check sees what the earlier ones took.
-- Returns allowed (for an up-to op, the tokens taken), what is left, retry_ms and ms until full
-- for each op in turn; a check whose bucket cannot be read has the error in the four places of
-- each op.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms
local flags = ARGV[4 * #KEYS + 1] or ''
local states, failures, charged, written = {}, {}, {}, {}
local reply = {}

-- Reads each of the check's buckets once per call; false when one cannot be read.
local function load(first, last)
  for i = first, last do
    local key = KEYS[i]
    if states[key] == nil and failures[key] == nil then
      states[key], failures[key] = read(key, now)
    end
    if failures[key] then
      for j = 4 * first - 3, 4 * last do reply[j] = failures[key] end
      return false
    end
  end
  return true
end

-- The i-th op against its bucket's state, taking `cost` as `mode` says.
local function apply(i, cost, mode)
  local a = 4 * i - 4
  return take(states[KEYS[i]], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]),
    tonumber(ARGV[a + 3]), cost, mode, now)
end

-- Keeps the i-th op's new state for its bucket, to be written after every check, and its answer.
local function charge(i, allowed, state, left, retry_ms, full_ms)
  local key = KEYS[i]
  if charged[key] == nil then written[#written + 1] = key end
  states[key], charged[key] = state, i
  reply[4 * i - 3], reply[4 * i - 2], reply[4 * i - 1], reply[4 * i] =
    allowed, left, retry_ms, full_ms
end

-- One check: ops first..last, with their codes (nil: every op plain).
local function check(first, last, codes)
  if not load(first, last) then return end
  if not (codes and codes:find('1', 1, true)) then -- nothing gates: each op stands alone
    for i = first, last do
      charge(i, apply(i, tonumber(ARGV[4 * i]), codes and codes:sub(i - first + 1, i - first + 1)))
    end
    return
  end
  local results, gate = {}, true
  for i = first, last do
    local code = codes:sub(i - first + 1, i - first + 1)
    results[i] = {apply(i, tonumber(ARGV[4 * i]), code)}
    if results[i][1] == 0 and code == '1' then gate = false end
  end
  for i = first, last do
    local allowed, state, left, retry_ms, full_ms = unpack(results[i])
    if gate then
      charge(i, allowed, state, left, retry_ms, full_ms)
    else -- nothing charged: what the bucket holds
      local _, _, held, _, held_full_ms = apply(i, 0, '0')
      reply[4 * i - 3], reply[4 * i - 2], reply[4 * i - 1], reply[4 * i] =
        allowed, held, retry_ms, held_full_ms
    end
  end
end

if flags == '' then -- the common call: one check of plain ops
  check(1, #KEYS, nil)
else
  local checks, count = {}, 0
  for codes in string.gmatch(flags, '%S+') do
    checks[#checks + 1], count = codes, count + #codes
  end
  if count ~= #KEYS then return redis.error_reply('ERR the codes do not match the keys') end
  local first = 1
  for _, codes in ipairs(checks) do
    check(first, first + #codes - 1, codes)
    first = first + #codes
  end
end
for _, key in ipairs(written) do -- with the limit of the last op that charged it
  local a = 4 * charged[key] - 4
  write(key, states[key], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), now)
end
return reply
