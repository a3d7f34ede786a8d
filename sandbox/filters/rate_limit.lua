-- Filter (inline): lets at most max_per_interval messages of each key
-- through per interval and drops the rest: what a log storm from one host
-- needs.
--
--   storm = { type = "filter", filename = "filters/rate_limit.lua",
--             message_matcher = "TRUE", max_per_interval = 1000,
--             interval_ms = 1000, ticker_interval_ms = 60000 }
--
-- Settings (read_config):
--   max_per_interval  messages of one key let through per interval, a whole
--                     number from 1 (required)
--   interval_ms       the interval (default 1000)
--   key               what the messages are counted by, as read_message
--                     names it (default "Hostname"; "Fields[programname]");
--                     a message without one counts under ""
--   max_keys          keys held at once (default 10000)
--   message_type      the Type of the summaries (default "rate_limit")
--
-- Intervals are measured in the messages' own time (Timestamp), key by
-- key: a key's interval starts with its first message, and the first
-- message at or after its end starts the next. So the limit holds the same
-- for a file read long after it was written, and a sender's storm is
-- limited by its own clock (a message dated before its key's interval
-- counts in it). Decoders that set no Timestamp get the time the message
-- was made. Each worker has its own instance: when one key's messages reach
-- several workers (several inputs or files), each lets max_per_interval of
-- them through.
--
-- With ticker_interval_ms, each timer_event injects, for each key it
-- dropped messages of since the last one, a message
--   Type       message_type
--   Timestamp  the time of the timer_event
--   Payload    "dropped N from KEY"
--   Fields     key (string), dropped (number)
-- in the order of the keys; none when it dropped nothing. Past 200 keys,
-- the rest are summed in one message, "dropped N from K other keys", whose
-- key is "". The shutdown call reports what is left.
--
-- Past max_keys keys, those whose interval has ended (by the latest
-- Timestamp seen) are forgotten, and if that is not enough all are: those
-- keys start new intervals.
--
-- A message let through is injected unchanged (lua_modules/message.lua).

local message = require "message"

local function whole(name, value, least)
  if type(value) ~= "number" or value < least or value % 1 ~= 0 then
    error(string.format("setting %s: a whole number from %d expected, got %s", name, least,
                        tostring(value)))
  end
  return value
end

local max_per_interval = whole("max_per_interval", read_config("max_per_interval"), 1)
local window_ns = whole("interval_ms", read_config("interval_ms") or 1000, 1) * 1e6
local max_keys = whole("max_keys", read_config("max_keys") or 10000, 1)
local key = read_config("key") or "Hostname"
message.name("key", key)
local message_type = read_config("message_type") or "rate_limit"
-- Drops are counted by key only when a timer_event reports them and
-- forgets them: without one the counts would grow without bound.
local reporting = (read_config("ticker_interval_ms") or 0) > 0

local read, read_message, inject_message = message.read, read_message, inject_message

-- Each key's interval: when it started, and the messages let through.
local start_of, passed_of, nkeys = {}, {}, 0
local latest = -math.huge -- the latest Timestamp seen
local dropped = {} -- key -> messages dropped since the last timer_event
-- Keys reported one by one in a timer_event; the rest in one summary, so
-- the summaries stay well within the default output_limit (64 KiB).
local MAX_REPORTED = 200

local function forget_ended()
  for k, start in pairs(start_of) do
    if start + window_ns <= latest then
      start_of[k], passed_of[k], nkeys = nil, nil, nkeys - 1
    end
  end
end

-- Whether a message of key k at time ts may go through.
local function admit(k, ts)
  if ts > latest then latest = ts end
  local start = start_of[k]
  if start ~= nil and ts < start + window_ns then
    local passed = passed_of[k]
    if passed >= max_per_interval then return false end
    passed_of[k] = passed + 1
    return true
  end
  if start == nil then
    if nkeys >= max_keys then
      forget_ended()
      if nkeys >= max_keys then start_of, passed_of, nkeys = {}, {}, 0 end
    end
    nkeys = nkeys + 1
  end
  start_of[k], passed_of[k] = ts, 1
  return true
end

function process_message()
  local k = tostring(read_message(key) or "")
  if admit(k, read_message("Timestamp")) then
    inject_message(read())
  elseif reporting then
    dropped[k] = (dropped[k] or 0) + 1
  end
  return 0
end

local function summary(ns, payload, k, n)
  inject_message({ Type = message_type, Timestamp = ns, Payload = payload,
                   Fields = { key = k, dropped = n } })
end

function timer_event(ns)
  local keys, others = {}, 0
  for k in pairs(dropped) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do
    if i <= MAX_REPORTED then
      summary(ns, string.format("dropped %d from %s", dropped[k], k), k, dropped[k])
    else
      others = others + dropped[k]
    end
  end
  if others > 0 then
    summary(ns, string.format("dropped %d from %d other keys", others, #keys - MAX_REPORTED),
            "", others)
  end
  dropped = {}
  forget_ended()
end
