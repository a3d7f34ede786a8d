-- Filter for the specs (filters_spec.lua): injects what message.read()
-- made of the message twice: written out as Lua source in a Payload, with
-- every value's Lua type, and then as it is.
local message = require "message"

local function dump(v)
  local t = type(v)
  if t == "string" then return string.format("%q", v) end
  if t ~= "table" then return t .. ":" .. tostring(v) end
  local keys, parts = {}, {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. dump(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end

function process_message()
  local m = message.read()
  inject_message({ Payload = dump(m) })
  inject_message(m)
  return 0
end
