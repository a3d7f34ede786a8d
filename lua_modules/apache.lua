-- apache: builds the reader of Apache httpd access-log lines written with a
-- LogFormat (mod_log_config), on nginx.lua's machinery (the same generated
-- scanner, escapes undone, "-" absent).
--
--   local compiled = apache.compile("combined", { tz = "UTC", reader = {...} })
--   local ok, at, element = compiled.scan(fields, headers, length)
--
-- The format is the LogFormat string as httpd.conf writes it (\" is ", \n
-- and \t their controls), or a name: common, combined, vhost_combined,
-- referer, agent. Each directive becomes a field, named as the nginx
-- variable of the same meaning where there is one, so that both decoders'
-- messages read alike:
--   %h remote_host   %a remote_addr ({c}: peer_addr)   %A server_addr
--   %l remote_logname   %u remote_user   %r request (+ request_method,
--   request_uri, server_protocol as nginx.lua splits it)   %m request_method
--   %U uri   %q query_string   %H server_protocol   %>s status (%s and %<s:
--   status, or original_status when the format has %>s too)
--   %b body_bytes_sent ("-" is 0)   %B body_bytes_sent   %I bytes_received
--   %O bytes_sent   %S bytes_transferred   %D request_time_us
--   %T request_time_s ({ms}: request_time_ms, {us}: request_time_us,
--   {s}: request_time_s)   %k keepalive_requests   %p server_port
--   ({remote}: remote_port)   %P pid ({tid}, {hextid}: tid)   %v server_name
--   %V host   %X connection_status   %f request_filename   %R handler
--   %L request_log_id   %{X}i http_x   %{X}o sent_http_x   %{X}C cookie_X
--   %{X}e env_X   %{X}n note_X   %{X}^ti trailer_in_x   %{X}^to trailer_out_x
-- (header names lower-cased, "-" as "_", as nginx names them). Numbers are
-- typed as nginx.lua's. Times: %t and %{strftime format}t (strptime's
-- directives; begin: and end: prefixes read alike; %t has its brackets) and %{sec}t, %{msec}t:
-- the first is the Timestamp (in options.tz when it has no offset), a later
-- one the field "time"; %{usec}t, %{msec_frac}t and %{usec_frac}t are
-- integer fields time_usec, time_msec_frac, time_usec_frac. Conditions
-- (%400,501{User-agent}i, %!200i) are read: the value is "-" when the
-- condition failed. An unknown directive raises an error with its position.

local nginx = require "nginx"

local format = string.format

local apache = {}

local common = [[%h %l %u %t \"%r\" %>s %b]]
apache.formats = {
  common = common,
  combined = common .. [[ \"%{Referer}i\" \"%{User-agent}i\"]],
  vhost_combined = [[%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"]],
  referer = [[%{Referer}i -> %U]],
  agent = [[%{User-agent}i]],
}

local function header_name(name) return (name:lower():gsub("-", "_")) end

-- Directive letter -> function(param, format_has_final_status) -> field, type.
local simple = {
  h = "remote_host", A = "server_addr", l = "remote_logname", u = "remote_user",
  m = "request_method", U = "uri", q = "query_string", H = "server_protocol",
  v = "server_name", V = "host", X = "connection_status", f = "request_filename",
  R = "handler", L = "request_log_id",
}
local integers = { B = "body_bytes_sent", b = "body_bytes_sent", I = "bytes_received",
                   O = "bytes_sent", S = "bytes_transferred", D = "request_time_us",
                   k = "keepalive_requests" }
local by_param = {
  a = function(p) return p == "c" and "peer_addr" or "remote_addr", "string" end,
  i = function(p) return "http_" .. header_name(p), "string" end,
  o = function(p) return "sent_http_" .. header_name(p), "string" end,
  C = function(p) return "cookie_" .. p, "string" end,
  e = function(p) return "env_" .. p, "string" end,
  n = function(p) return "note_" .. p, "string" end,
  ["^ti"] = function(p) return "trailer_in_" .. header_name(p), "string" end,
  ["^to"] = function(p) return "trailer_out_" .. header_name(p), "string" end,
  T = function(p)
    local unit = ({ [""] = "s", s = "s", ms = "ms", us = "us" })[p]
    return unit and "request_time_" .. unit, "integer"
  end,
  p = function(p)
    if p == "remote" then return "remote_port", "integer" end
    return (p == "" or p == "canonical" or p == "local") and "server_port", "integer"
  end,
  P = function(p)
    if p == "hextid" then return "tid", "string" end
    return ({ [""] = "pid", pid = "pid", tid = "tid" })[p], "integer"
  end,
}
local epoch_fields = { usec = "time_usec", msec_frac = "time_msec_frac",
                       usec_frac = "time_usec_frac" }
local epoch_formats = { sec = "%s", msec = "%Q" }

-- The LogFormat as { literal = text } and { letter =, param =, final =,
-- position = } parts.
function apache.parse(log_format)
  if type(log_format) ~= "string" or log_format == "" then
    error("apache LogFormat: expected a non-empty string", 0)
  end
  local parts, literal, at = {}, {}, 1
  local function flush()
    if #literal > 0 then parts[#parts + 1] = { literal = table.concat(literal) } end
    literal = {}
  end
  while at <= #log_format do
    local c = log_format:sub(at, at)
    if c == "\\" then
      local e = log_format:sub(at + 1, at + 1)
      literal[#literal + 1] = ({ n = "\n", t = "\t" })[e] or e
      at = at + 2
    elseif c == "%" and log_format:sub(at + 1, at + 1) == "%" then
      literal[#literal + 1] = "%"
      at = at + 2
    elseif c == "%" then
      local part = { position = at, param = "" }
      local i = at + 1
      while true do
        local m = log_format:sub(i, i)
        if m == "{" then
          local close = log_format:find("}", i, true)
          if not close then
            error(format("apache LogFormat: unterminated %%{ at position %d", at), 0)
          end
          part.param, i = log_format:sub(i + 1, close - 1), close + 1
        elseif m == ">" then part.final, i = true, i + 1
        elseif m:find("^[!<,%d]$") then i = i + 1
        elseif m == "^" then part.letter, i = log_format:sub(i, i + 2), i + 3 break
        else part.letter, i = m, i + 1 break end
      end
      flush()
      parts[#parts + 1] = part
      at = i
    else
      literal[#literal + 1] = c
      at = at + 1
    end
  end
  flush()
  return parts
end

-- The scanner element of a directive, or an error naming it.
local function element_of(part, has_final_status, state)
  local letter, param = part.letter, part.param
  local field, kind
  if letter == "r" then
    field, kind = "request", "request"
  elseif letter == "s" then
    field, kind = (part.final or not has_final_status) and "status" or "original_status", "integer"
  elseif letter == "t" then
    local spec = param:gsub("^begin:", ""):gsub("^end:", "")
    if epoch_fields[spec] then
      field, kind = epoch_fields[spec], "integer"
    elseif state.timestamp then
      field, kind = "time", "string"
    else
      state.timestamp = true
      return { field = "time", type = "time", header = "Timestamp", label = "%t",
               time = epoch_formats[spec] or (spec == "" and "[%d/%b/%Y:%H:%M:%S %z]") or spec }
    end
  elseif simple[letter] then
    field, kind = simple[letter], "string"
  elseif integers[letter] then
    field, kind = integers[letter], "integer"
  elseif by_param[letter] then
    field, kind = by_param[letter](param)
  end
  if not field then
    error(format("apache LogFormat: unsupported directive %%%s%s at position %d",
                 param ~= "" and "{" .. param .. "}" or "", letter or "", part.position), 0)
  end
  return { field = field, type = kind, label = "%" .. (param ~= "" and "{" .. param .. "}" or "")
           .. (part.final and ">" or "") .. letter, dash_zero = letter == "b" or nil }
end

-- The reader of lines written with `log_format` (or its name). options as
-- nginx.compile's (escape is Apache's own: \" \\ \xhh and C escapes).
function apache.compile(log_format, options)
  options = options or {}
  local parts = apache.parse(apache.formats[log_format] or log_format)
  local has_final_status = false
  for _, part in ipairs(parts) do
    if part.letter == "s" and part.final then has_final_status = true end
  end
  local elements, state = {}, {}
  for _, part in ipairs(parts) do
    elements[#elements + 1] = part.literal and { literal = part.literal }
                              or element_of(part, has_final_status, state)
  end
  local build_options = {}
  for k, v in pairs(options) do build_options[k] = v end
  build_options.escape = "apache"
  return nginx.build(elements, build_options)
end

return apache
