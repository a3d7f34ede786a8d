-- Filter (inline): keeps one message in N and drops the rest.
--
--   sample = { type = "filter", filename = "filters/sample.lua",
--              message_matcher = "Type == 'access'", keep_one_in = 10,
--              key = "Fields[user]" }
--
-- Settings (read_config):
--   keep_one_in  N, a whole number from 1 (default 1: keep all)
--   key          what decides, as read_message names it ("Hostname",
--                "Fields[user]"); default: none
--
-- Without a key, the first message of every N the instance takes is kept:
-- each worker has its own instance and count, so of all messages about one
-- in N is kept, though not exactly every N-th. With a key, a message is
-- kept when the FNV-1a hash of its key's value (as tostring writes it; a
-- message without one hashes "") is 0 modulo N: all messages of one
-- key are kept or all dropped, on every worker and every run, and about
-- one key in N is kept.
--
-- A kept message is injected unchanged (lua_modules/message.lua).

local message = require "message"

local keep_one_in = read_config("keep_one_in") or 1
if type(keep_one_in) ~= "number" or keep_one_in < 1 or keep_one_in % 1 ~= 0 then
  error("setting keep_one_in: a whole number from 1 expected, got " .. tostring(keep_one_in))
end
local key = read_config("key")
if key ~= nil then message.name("key", key) end

local read, read_message, inject_message = message.read, read_message, inject_message
local bxor, tobit, lshift, byte = bit.bxor, bit.tobit, bit.lshift, string.byte

-- FNV-1a, 32 bits: h * 16777619 is h * 2^24 + h * 403, each part exact
-- in a double, where the whole product (up to 2^56) would not be.
local function fnv1a(s)
  local h = tobit(2166136261)
  for i = 1, #s do
    h = bxor(h, byte(s, i))
    h = tobit(lshift(h, 24) + h * 403)
  end
  return h
end

-- Each key's fate, computed once (memo.lua: bounded). Keys are strings:
-- a number key could be NaN, which no table takes.
local keep_key = require("memo").new(function(value)
  return fnv1a(value) % keep_one_in == 0
end)

local seen = 0

function process_message()
  local keep
  if key then
    keep = keep_key[tostring(read_message(key) or "")]
  else
    keep = seen == 0
    seen = seen + 1
    if seen == keep_one_in then seen = 0 end
  end
  if keep then inject_message(read()) end
  return 0
end
