-- rsyslog.template: the grammar of rsyslog's string templates.
--
--   template.parse('<%PRI%>%TIMESTAMP:::date-rfc3339% %msg%\n')
--   --> { {kind = "constant", text = "<", position = 1},
--         {kind = "property", name = "PRI", position = 2, options = {}},
--         {kind = "constant", text = ">", position = 7},
--         {kind = "property", name = "TIMESTAMP", position = 8,
--          from = "", to = "", options = {"date-rfc3339"}}, ... }
-- Positions are 1-based character positions in the template. Constants have
-- their escapes expanded as rsyslog does: \n \r \t \\ \% \" and decimal
-- \ddd. A property is %name[:from:to[:options[:outname]]]%, options
-- comma-separated and lower-cased (rsyslog reads them case-insensitively);
-- outname, the name jsonf writes, is kept as written.
-- Malformed templates raise an error naming the position.
-- To extend: add an escape to `escapes`, or a part to `property`.

local lpeg = require "lpeg"

local P, R, S, C, Cc, Cg, Cp, Cs, Ct = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc,
  lpeg.Cg, lpeg.Cp, lpeg.Cs, lpeg.Ct

local template = {}

local escapes = { n = "\n", r = "\r", t = "\t", ["\\"] = "\\", ["%"] = "%", ['"'] = '"' }
local decimal_escape = R"09"^1 / function(digits) return string.char(tonumber(digits) % 256) end
local escape = P"\\" / "" * (C(S'nrt\\%"') / escapes + decimal_escape + P(1))
             + P"\\"                                 -- a lone trailing backslash
local constant = Ct(Cg(Cp(), "position") * Cg(Cc("constant"), "kind")
                    * Cg(Cs((escape + (1 - S"%\\"))^1), "text"))

local function split_options(text)
  local options = {}
  for option in text:gmatch("[^,]+") do options[#options + 1] = option:lower() end
  return options
end
local part = C((1 - S":%")^0)
local options = C((1 - S":%")^0) / split_options
local property = Ct(Cg(Cp(), "position") * Cg(Cc("property"), "kind") * "%"
                    * Cg(C((1 - S":%")^1), "name")
                    * (":" * Cg(part, "from") * ":" * Cg(part, "to")
                       * (":" * Cg(options, "options")
                          * (":" * Cg(C((1 - P"%")^0), "outname"))^-1)^-1)^-1
                    * "%")
local elements = Ct((constant + property)^0) * Cp()

local function printable(text)
  return (text:gsub("%c", function(c) return string.format("\\%03d", c:byte()) end))
end

local function describe_failure(text, position)
  local rest = text:sub(position)
  if rest:find("^%%%%") then return "empty property name" end
  if rest:find("^%%[^%%]*$") then return "unterminated property (no closing %)" end
  if rest:find("^%%[^%%]*:[^%%]*%%") then return "malformed property (expected %name:from:to:options%)" end
  return "malformed property"
end

-- Parses `text`; raises "rsyslog template: <what> at position N" on error.
function template.parse(text)
  if type(text) ~= "string" or text == "" then
    error("rsyslog template: expected a non-empty template string", 2)
  end
  local parsed, stopped_at = elements:match(text)
  if stopped_at <= #text then
    error(string.format('rsyslog template: %s at position %d in "%s"',
                        describe_failure(text, stopped_at), stopped_at, printable(text)), 2)
  end
  for _, element in ipairs(parsed) do
    element.options = element.options or {}
  end
  return parsed
end

return template
