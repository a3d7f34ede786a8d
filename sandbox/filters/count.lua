-- Filter (tap): counts the messages it takes per key, and at each
-- timer_event injects one message per key with the count since the last.
--
--   counts = { type = "filter", filename = "filters/count.lua", mode = "tap",
--              message_matcher = "Type != 'count'", key = "Hostname",
--              ticker_interval_ms = 60000 }
--
-- Settings (read_config):
--   key           what the messages are counted by, as read_message names
--                 it (default "Type"; "Fields[programname]"); a message
--                 without one counts under ""
--   message_type  the Type of the counts (default "count")
--   ticker_interval_ms  (the filter's own setting) how often counts are
--                 injected; without it there is no timer_event, so none are
--
-- Each timer_event injects, per key seen since the last one, in the order
-- of the keys:
--   Type       message_type
--   Timestamp  the time of the timer_event
--   Payload    "KEY: COUNT"
--   Fields     key (string), count (number), interval_ms (number: the
--              ticker interval; the last one, at shutdown, may be shorter)
-- A key seen by no message since is not reported, and an instance that saw
-- nothing injects nothing: each worker has its own instance, so there is
-- one count per key per worker that saw it. Past 200 keys, the rest are
-- summed in one message whose key is "" and Payload "K other keys: COUNT",
-- so the counts stay well within the default output_limit (64 KiB).
-- What it injects is seen by the filters after it only, never by itself.

local message = require "message"

local key = read_config("key") or "Type"
message.name("key", key)
local message_type = read_config("message_type") or "count"
local interval_ms = read_config("ticker_interval_ms") or 0

local read_message, tostring = read_message, tostring
local counts = {}

function process_message()
  local k = tostring(read_message(key) or "")
  counts[k] = (counts[k] or 0) + 1
  return 0
end

local MAX_REPORTED = 200

local function report(ns, payload, k, n)
  inject_message({ Type = message_type, Timestamp = ns, Payload = payload,
                   Fields = { key = k, count = n, interval_ms = interval_ms } })
end

function timer_event(ns)
  local keys, others = {}, 0
  for k in pairs(counts) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do
    if i <= MAX_REPORTED then report(ns, k .. ": " .. counts[k], k, counts[k])
    else others = others + counts[k] end
  end
  if others > 0 then
    report(ns, string.format("%d other keys: %d", #keys - MAX_REPORTED, others), "", others)
  end
  counts = {}
end
