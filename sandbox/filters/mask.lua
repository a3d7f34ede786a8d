-- Filter (inline): masks secrets in messages, or removes them.
--
--   mask = { type = "filter", filename = "filters/mask.lua", message_matcher = "TRUE",
--            fields = { "Payload", "Fields[query]" },
--            patterns = { "(password=)%S+", "(card )%d%d%d%d%-%d%d%d%d" },
--            replacement = "%1***",
--            remove = { "Fields[token]" } }
--
-- Settings (read_config):
--   fields       the values to mask: text headers (Payload, Hostname, Type,
--                Logger, EnvVersion) and Fields[NAME] (default: none)
--   patterns     Lua patterns (string.gsub's): each match in those values
--                is replaced by replacement, pattern after pattern, in
--                string values and the strings of arrays; numbers and
--                booleans are left as they are. Without patterns, each
--                value (of any type) is replaced whole by replacement.
--   replacement  what replaces a match (default "***"); string.gsub's
--                replacement, so "%1" is the first capture (the whole match
--                in a pattern without captures) and "%%" a %
--   remove       the values to remove: headers and Fields[NAME]
--                (default: none)
-- fields or remove must name something. A name the message does not have
-- is passed over. A malformed pattern fails the load when matching it
-- against "" shows it; one that shows only on some text ("(%d") fails the
-- calls that meet it, whose messages are dead-lettered with the error. The message is injected in place of the one taken, with
-- the rest as it was (lua_modules/message.lua).

local message = require "message"

local TEXT_HEADERS = { Payload = true, Hostname = true, Type = true, Logger = true, EnvVersion = true }

-- A setting that is a list of strings (a single string: a list of one).
local function list(name)
  local value = read_config(name) or {}
  if type(value) == "string" then value = { value } end
  if type(value) ~= "table" then error("setting " .. name .. ": a list of strings expected") end
  for i, v in ipairs(value) do
    if type(v) ~= "string" then
      error(string.format("setting %s: item %d is a %s, not a string", name, i, type(v)))
    end
  end
  return value
end

-- The headers and the fields a setting names; text_only: headers must be
-- text (masking puts a string in their place).
local function names(setting, text_only)
  local headers, fields = {}, {}
  for _, name in ipairs(list(setting)) do
    local header, field = message.name(setting, name)
    if header and text_only and not TEXT_HEADERS[header] then
      error(string.format("setting %s: %s is not a text header", setting, header))
    end
    if header then headers[#headers + 1] = header else fields[#fields + 1] = field end
  end
  return headers, fields
end

local mask_headers, mask_fields = names("fields", true)
local remove_headers, remove_fields = names("remove", false)
if #mask_headers + #mask_fields + #remove_headers + #remove_fields == 0 then
  error("settings fields and remove name nothing to mask or remove")
end
local patterns = list("patterns")
local replacement = read_config("replacement") or "***"
if type(replacement) ~= "string" then error("setting replacement: a string expected") end
for _, p in ipairs(patterns) do
  local ok, err = pcall(string.gsub, "", p, replacement)
  if not ok then error(string.format("setting patterns: %q: %s", p, err)) end
end

local read, inject_message, gsub, type = message.read, inject_message, string.gsub, type
local npatterns = #patterns

local function mask_text(s)
  for i = 1, npatterns do s = gsub(s, patterns[i], replacement) end
  return s
end

-- A value as message.read gives it, masked.
local function masked(v)
  if npatterns == 0 then return replacement end
  local t = type(v)
  if t == "string" then return mask_text(v) end
  if t ~= "table" then return v end
  if v.value ~= nil then -- a typed field: its value, or its array
    v.value = masked(v.value)
    return v
  end
  for i = 1, #v do
    if type(v[i]) == "string" then v[i] = mask_text(v[i]) end
  end
  return v
end

function process_message()
  local m = read()
  local fields = m.Fields
  for i = 1, #mask_headers do
    local h = mask_headers[i]
    if m[h] ~= nil then m[h] = masked(m[h]) end
  end
  for i = 1, #mask_fields do
    local f = mask_fields[i]
    if fields[f] ~= nil then fields[f] = masked(fields[f]) end
  end
  for i = 1, #remove_headers do m[remove_headers[i]] = nil end
  for i = 1, #remove_fields do fields[remove_fields[i]] = nil end
  inject_message(m)
  return 0
end
