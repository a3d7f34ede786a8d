-- Filter (inline): enrichment. Sets Hostname, when a message has none, to
-- this host's name, and adds static fields.
--
--   enrich = { type = "filter", filename = "filters/add_hostname.lua",
--              message_matcher = "TRUE", fields = { env = "prod", dc = "fra1" } }
--
-- Settings (read_config):
--   hostname  the name to set (default: this machine's name, which
--             read_config("Hostname") gives)
--   fields    fields to set on every message, name = string, number or
--             boolean; they replace fields of the same name (default: none)
--
-- A message whose Hostname is absent or "" gets hostname; one that has a
-- Hostname keeps it. The message is injected in place of the one taken, with
-- the rest as it was (lua_modules/message.lua).

local message = require "message"

local hostname = read_config("hostname") or read_config("Hostname")
if type(hostname) ~= "string" or hostname == "" then
  error("setting hostname: a non-empty string expected, not " .. tostring(hostname))
end
local static = read_config("fields") or {}
if type(static) ~= "table" then error("setting fields: a table of name = value expected") end
-- As two lists: pairs() is not compiled by LuaJIT, a numeric loop is.
local names, values = {}, {}
for name, value in pairs(static) do
  local t = type(value)
  if type(name) ~= "string" or (t ~= "string" and t ~= "number" and t ~= "boolean") then
    error("setting fields: " .. tostring(name) .. " must be a name = string, number or boolean")
  end
  names[#names + 1], values[#values + 1] = name, value
end
local nstatic = #names

local read, inject_message = message.read, inject_message

function process_message()
  local m = read()
  if m.Hostname == nil then m.Hostname = hostname end
  local fields = m.Fields
  for i = 1, nstatic do fields[names[i]] = values[i] end
  inject_message(m)
  return 0
end
