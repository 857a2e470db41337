
-- One call: the buckets of one or more checks, each check's atomic, decided in the order given
-- against one reading of Redis's clock. Appended to an algorithm's take and its layout's read
-- and write.
-- keys[i] the i-th op's bucket; a key may come again in a later check of the call, never twice
-- in one check. ARGV[4i-3 .. 4i] the i-th op's four numbers.
-- The keys are KEYS, except in a call across cluster slots: a node refuses declared keys of
-- several slots, so such a call declares its first check's keys and passes the other checks'
-- after the codes (the script is flagged allow-cross-slot-keys); a key the node does not hold
-- then fails its check with the node's error, and the store sends that check again alone.
-- ARGV[4n+1], when present, has a code per op ('0' plain, 'u' take up to the cost, 'd' take it
-- into debt, '1' this op's rejection charges none of its check), the checks' codes apart by
-- single spaces; absent, the call is one check of plain ops. A key is read at most once and
-- written at most once, after every check: a later check sees what the earlier ones took.
-- Returns allowed (for an up-to op, the tokens taken), what is left, retry_ms and ms until full
-- for each op in turn; a check whose bucket cannot be read has the error in the four places of
-- each op.
local t = redis.call('TIME') -- Redis's clock: one clock for every gateway
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) -- ms
local argc = #ARGV
local declared = #KEYS
local n = declared + math.floor((argc - 4 * declared) / 5) -- 4 numbers and a key an undeclared op
local flags = ARGV[4 * n + 1]
local keys = KEYS
if n > declared then
  keys = {}
  for i = 1, declared do keys[i] = KEYS[i] end
  for i = declared + 1, n do keys[i] = ARGV[4 * n + 1 + i - declared] end
end
local states, failures, charged, written = {}, {}, {}, {}
local unread = {} -- each bucket as read, before any op of the call
local reply = {}

-- ARGV[i] as a number. The checks of a call mostly share their limits and costs, and tonumber
-- (strtod) costs more than the rest of an op's arithmetic: each distinct text is parsed once.
local numbers = {}
local function number(i)
  local text = ARGV[i]
  local value = numbers[text]
  if value == nil then
    value = tonumber(text)
    numbers[text] = value
  end
  return value
end

-- Reads each of ops first..last's buckets once per call; false when one cannot be read, and
-- then the check's every op answers the error.
local function load(first, last)
  for i = first, last do
    local key = keys[i]
    if states[key] == nil and failures[key] == nil then
      states[key], failures[key] = read(key, now)
    end
    local failure = failures[key]
    if failure then
      for j = 4 * first - 3, 4 * last do reply[j] = failure end
      return false
    end
  end
  return true
end

-- The i-th op against its bucket's state, taking `cost` as `mode` says.
local function apply(i, cost, mode)
  local a = 4 * i - 4
  return take(states[keys[i]], number(a + 1), number(a + 2), number(a + 3), cost, mode, now)
end

-- Keeps the i-th op's new state for its bucket, to be written after every check, and its answer.
local function charge(i, allowed, state, left, retry_ms, full_ms)
  local key = keys[i]
  if charged[key] == nil then written[#written + 1] = key end
  states[key], charged[key] = state, i
  local r = 4 * i
  reply[r - 3], reply[r - 2], reply[r - 1], reply[r] = allowed, left, retry_ms, full_ms
end

-- One check of ops first..last, each standing alone: codes '0', 'u' or 'd' (nil: all '0').
local function check_each(first, last, codes)
  if not load(first, last) then return end
  for i = first, last do
    local mode = codes and codes:sub(i - first + 1, i - first + 1)
    charge(i, apply(i, number(4 * i), mode))
  end
end

-- One all-or-nothing check of ops first..last: a rejected op coded '1' charges none of them.
local function check_gated(first, last, codes)
  if not load(first, last) then return end
  local results, gate = {}, true
  for i = first, last do
    local code = codes:sub(i - first + 1, i - first + 1)
    results[i] = {apply(i, number(4 * i), code)}
    if results[i][1] == 0 and code == '1' then gate = false end
  end
  for i = first, last do
    local allowed, state, left, retry_ms, full_ms = unpack(results[i])
    if gate then
      charge(i, allowed, state, left, retry_ms, full_ms)
    else -- nothing charged: what the bucket holds
      local _, _, held, _, held_full_ms = apply(i, 0, '0')
      local r = 4 * i
      reply[r - 3], reply[r - 2], reply[r - 1], reply[r] = allowed, held, retry_ms, held_full_ms
    end
  end
end

-- Every op plain, the commonest call: one pass, as check_each would decide each check, as long
-- as every bucket can be read; false at the first that cannot, with nothing written yet.
local function run_plain()
  -- apply() and charge() inline: a call to each costs about 2,500 instructions a check, 5% of
  -- Redis's work for it (bench/script_instructions).
  for i = 1, n do
    local key = keys[i]
    local state = states[key]
    if state == nil then
      state = read(key, now)
      if not state then return false end
      states[key], unread[key] = state, state
    end
    local a = 4 * i
    local allowed, new_state, left, retry_ms, full_ms = take(state,
      numbers[ARGV[a - 3]] or number(a - 3), numbers[ARGV[a - 2]] or number(a - 2),
      numbers[ARGV[a - 1]] or number(a - 1), numbers[ARGV[a]] or number(a), nil, now)
    if charged[key] == nil then written[#written + 1] = key end
    states[key], charged[key] = new_state, i
    reply[a - 3], reply[a - 2], reply[a - 1], reply[a] = allowed, left, retry_ms, full_ms
  end
  return true
end

-- Every check in turn, by its codes.
local function run_checks()
  if flags == nil then return check_each(1, n, nil) end
  local checks, count = {}, 0
  for codes in flags:gmatch('%S+') do
    checks[#checks + 1], count = codes, count + #codes
  end
  if count ~= n then return redis.error_reply('ERR the codes do not match the keys') end
  local first = 1
  for _, codes in ipairs(checks) do
    local last = first + #codes - 1
    if codes:find('1', 1, true) then
      check_gated(first, last, codes)
    else
      check_each(first, last, codes)
    end
    first = last + 1
  end
end

local plain = flags == nil
if not plain and not flags:find('[^0 ]') then -- only plain codes: their number must match
  local _, spaces = flags:gsub(' ', '')
  plain = #flags - spaces == n
end
if not (plain and run_plain()) then
  -- A bucket could not be read: the checks again, each apart, from the buckets as read.
  states, charged, written, reply = unread, {}, {}, {}
  local refused = run_checks()
  if refused then return refused end
end
for _, key in ipairs(written) do -- with the limit of the last op that charged it
  local a = 4 * charged[key] - 4
  write(key, states[key], number(a + 1), number(a + 2), number(a + 3), now)
end
return reply
