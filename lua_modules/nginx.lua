-- nginx: builds the reader of access-log lines written with an nginx
-- log_format, as rsyslog.lua does for rsyslog templates.
--
--   local compiled = nginx.compile("combined", { escape = "default", reader = {...} })
--   local ok, at, element = compiled.scan(fields, headers, length)
--   if not ok then return -1, compiled.reason(at, element) end
--
-- The log_format is the string nginx is given (its parts joined, as nginx
-- joins them), or "combined", nginx's predefined one. Variables are $name or
-- ${name}; everything else must appear as written. Each variable becomes
-- the field of its name without "$" ($status -> status, $http_user_agent ->
-- http_user_agent), typed by nginx/variables.lua: numbers for $status,
-- $body_bytes_sent, $request_time, ...; arrays for the $upstream_* lists;
-- strings for the rest, known or not ($http_x_foo, $cookie_x, $arg_x, a
-- map's variable). A value nginx wrote as "-" is absent (no field).
-- $request is kept whole and split into request_method, request_uri and
-- server_protocol (a $request_method, ... of the format itself is read too,
-- and being later in the line, wins when they differ).
-- The Timestamp (ns UTC) is the most precise time in the line: $msec, else
-- $time_iso8601, else $time_local; a time that is not the Timestamp is a
-- field (msec a number, the others the text).
--
-- options:
--   escape   the log_format's escape= parameter: "default" (\xHH undone,
--            "-" absent), "json" (JSON escapes undone; nginx writes a
--            missing value as "", so "" is absent), "none" (as written,
--            "" absent)
--   tz       the zone of times without an offset (none of nginx's lack one;
--            for formats of other servers: apache.lua), default "UTC"
--   integers true: integer fields get value_type 2 (INTEGER) instead of
--            being plain numbers (DOUBLE): inject_message then takes its
--            slower path (twice the CPU a combined line, bench/nginx-pipeline)
--   header_of  fields that become headers instead ({ hostname = "Hostname" })
--   reader   the sandbox's record_* functions: { byte, text, find, stops,
--            span, decimal } (nginx/scanner.lua)
-- A malformed log_format, or one whose values cannot be told apart, raises
-- an error naming the position.

local scanner = require "nginx.scanner"
local variables = require "nginx.variables"
local strptime = require "date.strptime"
local escape = require "nginx.escape"

local format = string.format

local nginx = {}

nginx.formats = {
  combined = '$remote_addr - $remote_user [$time_local] "$request" $status '
             .. '$body_bytes_sent "$http_referer" "$http_user_agent"',
}

-- Text in a message: quotes and backslashes escaped, controls as \ddd.
local function printable(text)
  return (text:gsub('[%c"\\]', function(c)
    if c == '"' or c == "\\" then return "\\" .. c end
    return format("\\%03d", c:byte())
  end))
end

-- The log_format as a list of { literal = text } and { variable = name,
-- position = p }.
function nginx.parse(log_format)
  if type(log_format) ~= "string" or log_format == "" then
    error("nginx log_format: expected a non-empty string", 0)
  end
  local parts, at, literal = {}, 1, {}
  while at <= #log_format do
    local dollar = log_format:find("$", at, true)
    literal[#literal + 1] = log_format:sub(at, (dollar or 0) - 1)
    if not dollar then break end
    local name, after = log_format:match("^{([%w_]+)}()", dollar + 1)
    if not name then name, after = log_format:match("^([%w_]+)()", dollar + 1) end
    if not name then
      error(format('nginx log_format: invalid variable name at position %d in "%s"',
                   dollar, printable(log_format)), 0)
    end
    if table.concat(literal) ~= "" then parts[#parts + 1] = { literal = table.concat(literal) } end
    literal = {}
    parts[#parts + 1] = { variable = name, position = dollar }
    at = after
  end
  if table.concat(literal) ~= "" then parts[#parts + 1] = { literal = table.concat(literal) } end
  return parts
end

local ABSENT = { default = "dash", json = "empty", none = "empty", apache = "dash" }
local TIME_PRECISION = { msec = 3, time_iso8601 = 2, time_local = 1 }

local function describe(elements, index)
  local element = elements[index]
  if not element then return "the end of the record" end
  if element.literal then return format('"%s"', printable(element.literal)) end
  local after = elements[index + 1]
  if after and after.literal then
    return format('%s and then "%s"', element.label, printable(after.literal))
  end
  return element.label
end

-- Compiles scanner elements (nginx/scanner.lua) into { scan, reason };
-- apache.lua builds on this too. options as above; escape may also be
-- "apache".
function nginx.build(elements, options)
  local mode = options.escape or "default"
  if not ABSENT[mode] then
    error(format('nginx: escape must be "default", "json" or "none", not "%s"', tostring(mode)), 0)
  end
  for _, element in ipairs(elements) do
    if element.time then
      element.time = strptime.compile(element.time, { tz = options.tz, byte = options.reader.byte })
    end
    if element.field and (options.header_of or {})[element.field] then
      element.header = options.header_of[element.field]
    end
  end
  local scan = scanner.generate(elements, {
    absent = ABSENT[mode], unescape = mode ~= "none" and escape.unescape or nil,
    integers = options.integers, reader = options.reader,
  })
  return {
    scan = scan,
    reason = function(at, index)
      return format("record does not match the log format: expected %s at byte %d",
                    describe(elements, index), at)
    end,
  }
end

-- The reader of lines written with `log_format` (or its name).
function nginx.compile(log_format, options)
  options = options or {}
  local parts = nginx.parse(nginx.formats[log_format] or log_format)
  local timestamp
  for _, part in ipairs(parts) do
    local precision = TIME_PRECISION[part.variable]
    if precision and (not timestamp or precision > TIME_PRECISION[timestamp]) then
      timestamp = part.variable
    end
  end
  local elements = {}
  for _, part in ipairs(parts) do
    if part.literal then
      elements[#elements + 1] = { literal = part.literal }
    else
      local name = part.variable
      local spec = variables.of(name)
      local element = { field = name, type = spec.type, label = "$" .. name }
      if spec.type == "time" then
        if name == timestamp then
          element.header, element.time = "Timestamp", spec.format
        else
          element.type = name == "msec" and "double" or "string"
        end
      end
      elements[#elements + 1] = element
    end
  end
  return nginx.build(elements, options)
end

return nginx
