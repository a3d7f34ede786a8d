-- rsyslog: turns an rsyslog template into the LPeg grammar that reads lines
-- written with it.
--
--   local grammar = rsyslog.build_grammar(
--     "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
--     { tz = "Asia/Shanghai" })
--   local t = grammar:match("<44>May 19 18:30:17 snack jls: foo bar 32")
--   --> { pri = 44, syslogfacility = 5, syslogseverity = 4, timestamp = <ns, UTC>,
--         hostname = "snack", syslogtag = "jls:", programname = "jls", msg = "foo bar 32" }
--   rsyslog.mismatch_reason(grammar, line)  -- why a line does not match
--   rsyslog.compile(template, options)      -- the same, split for hot paths
--
-- The template may also be a built-in name (rsyslog.templates). Options:
-- tz (zone name or date zone, for timestamps without an offset; default
-- "UTC"), now (clock for RFC 3164 year inference; default os.time),
-- permit_slash_in_programname (as rsyslog's parser option; default false).
-- Unknown properties, unsupported options and malformed templates raise an
-- error naming the property and its position in the template.
--
-- How a template becomes a grammar: each property has a kind saying how its
-- value is written (see `properties`), and each kind a pattern capturing
-- the value's text (see `kind_patterns`), built knowing what follows it in
-- the template: free text runs up to the next constant text, a word stops at
-- a space. The patterns in sequence capture raw texts only; a small
-- generated function, the assembler, then turns them into fields with table
-- lookups (PRI text -> pri, facility, severity; tag -> programname, procid;
-- timestamp text -> ns), because LuaJIT compiles that and LPeg's own table
-- and back captures cost twice as much per line.
-- Fields are named after the property (aliases folded: HOSTNAME/source ->
-- hostname, TIMESTAMP/timereported -> timestamp, syslogpriority ->
-- syslogseverity); timestamps are ns UTC; pri, facility and severity are
-- numbers, also when read from their -text forms. Options that only change
-- case or escaping keep the text as written. A template's final "\n" matches
-- the end of the record, with or without the newline.
-- To support a property: add it to `properties`, with a new kind in
-- `kind_patterns` if no existing one writes it the same way.

local lpeg = require "lpeg"
local date = require "date"
local syslog = require "syslog"
local json_string = require "json_string"
local template = require "rsyslog.template"
local scanner = require "rsyslog.scanner"

local P, R, S, C, Cc, Cp, Ct = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cc, lpeg.Cp, lpeg.Ct
local format = string.format

local rsyslog = {}

rsyslog.templates = {
  RSYSLOG_TraditionalFileFormat =
    "%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
  RSYSLOG_FileFormat =
    "%TIMESTAMP:::date-rfc3339% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n",
  RSYSLOG_TraditionalForwardFormat =
    "<%PRI%>%TIMESTAMP% %HOSTNAME% %syslogtag:1:32%%msg:::sp-if-no-1st-sp%%msg%",
  RSYSLOG_ForwardFormat =
    "<%PRI%>%TIMESTAMP:::date-rfc3339% %HOSTNAME% %syslogtag:1:32%%msg:::sp-if-no-1st-sp%%msg%",
  RSYSLOG_SysklogdFileFormat =
    "%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg%\n",
  RSYSLOG_SyslogProtocol23Format =
    "<%PRI%>1 %TIMESTAMP:::date-rfc3339% %HOSTNAME% %APP-NAME% %PROCID% %MSGID% %STRUCTURED-DATA% %msg%\n",
}

-- Property name (lower case) -> how its value is written, and its capture.
local function kind(name, field, nil_value) return { kind = name, field = field, nil_value = nil_value } end
local properties = {
  msg = kind("text", "msg"),
  rawmsg = kind("text", "rawmsg"),
  ["rawmsg-after-pri"] = kind("text", "rawmsg-after-pri"),
  hostname = kind("word", "hostname", true),
  source = kind("word", "hostname", true),
  fromhost = kind("word", "fromhost"),
  ["fromhost-ip"] = kind("word", "fromhost-ip"),
  programname = kind("word", "programname"),
  inputname = kind("word", "inputname"),
  ["app-name"] = kind("word", "app-name", true),
  procid = kind("word", "procid", true),
  msgid = kind("word", "msgid", true),
  syslogtag = kind("tag"),
  pri = kind("pri"),
  ["pri-text"] = kind("pri_text"),
  syslogfacility = kind("facility"),
  ["syslogfacility-text"] = kind("facility_text"),
  syslogseverity = kind("severity"),
  syslogpriority = kind("severity"),
  ["syslogseverity-text"] = kind("severity_text"),
  ["syslogpriority-text"] = kind("severity_text"),
  timestamp = kind("time", "timestamp"),
  timereported = kind("time", "timestamp"),
  timegenerated = kind("time", "timegenerated"),
  ["structured-data"] = kind("structured_data", "structured-data"),
  ["protocol-version"] = kind("number", "protocol-version"),
  iut = kind("number", "iut"),
}

-- The date options of time properties, and the format each one writes.
local date_formats = {
  ["date-rfc3164"] = "rfc3164", ["date-rfc3164-buggyday"] = "rfc3164",
  ["date-rfc3339"] = "iso8601", ["date-mysql"] = "mysql",
  ["date-pgsql"] = "pgsql", ["date-unixtimestamp"] = "unix",
}
-- Options that leave the text readable as written (case, control characters,
-- path safety, padding): accepted, the capture is the text as written.
-- drop-last-lf and sp-if-no-1st-sp are here too; element_pattern gives
-- sp-if-no-1st-sp its meaning.
local text_preserving = {
  uppercase = true, lowercase = true, ["escape-cc"] = true, ["drop-cc"] = true,
  ["space-cc"] = true, compressspace = true, ["secpath-drop"] = true,
  ["secpath-replace"] = true, ["fixed-width"] = true, ["pos-end-relative"] = true,
  ["drop-last-lf"] = true, ["sp-if-no-1st-sp"] = true,
}

local function build_error(element, message, ...)
  error(format("rsyslog template: %s (%%%s%% at position %d)",
               format(message, ...), element.name, element.position), 0)
end

-- Free text up to the first occurrence of `literal`.
local function until_literal(literal)
  local first = literal:sub(1, 1)
  if #literal == 1 then return (1 - P(first))^0 end
  return ((1 - P(first))^1 + (P(first) - P(literal)))^0
end

local rest = P(1)^0
-- Everything but one final newline (spans, so as fast as `rest`).
local rest_but_final_newline = (1 - P"\n")^0 * (P"\n" * #P(1) * (1 - P"\n")^0)^0

-- The capture of a value written as is: its text, or with the spans option
-- its start and end positions (two captures), for a record span.
local function as_is(context, pattern)
  if context.spans then return Cp() * pattern * Cp() end
  return C(pattern)
end

local function text_value(element, context)
  if context.options.json then return json_string.unescaped end
  if context.literal then return as_is(context, until_literal(context.literal)) end
  if context.at_end then
    -- The template's final newline ends the record; drop-last-lf only says
    -- the writer took one off, so any newline left is the msg's own.
    if context.ends_with_newline then return as_is(context, rest_but_final_newline) end
    return as_is(context, rest)
  end
  build_error(element, "free text must be followed by constant text or end the template")
end

local function word_value(context)
  local stops = " \t" .. (context.literal and context.literal:sub(1, 1) or "")
  return as_is(context, (1 - S(stops))^1)
end

-- "-" (NILVALUE) followed by what comes next in the template: captured as nil
-- (as two nils where the value would be two positions).
local function nil_value(context, spans)
  local value = syslog.nil_value * #(context.following + S" \t") * Cc(nil)
  if spans then return value * Cc(nil) end
  return value
end

local converters = {
  rfc3164 = { text = date.rfc3164_text, to_ns = date.rfc3164_to_ns },
  iso8601 = { text = date.iso8601_text, to_ns = date.iso8601_to_ns },
  mysql = { text = date.mysql_text, to_ns = date.mysql_to_ns },
  pgsql = { text = date.pgsql_text, to_ns = date.pgsql_to_ns },
  unix = { text = date.unix_text, to_ns = function() return date.unix_to_ns end },
}

local function time_converter(context)
  local chosen, zone = "rfc3164", context.zone
  for _, option in ipairs(context.option_list) do
    if date_formats[option] then chosen = date_formats[option] end
    if option == "date-utc" then zone = date.zone("UTC") end
  end
  return converters[chosen].text, converters[chosen].to_ns(zone, context.now), chosen, zone
end

-- Each kind returns the pattern of its value, capturing exactly one value,
-- and a function from the Lua expression holding that value to the fields it
-- makes, as a list of { field name, Lua expression }. Tables and converters
-- the expressions use are registered with context.lookup(name, value),
-- which returns the name to use in them. A kind whose value is a record
-- span (the spans option) captures two positions instead, and returns
-- true third. A kind that rsyslog.scanner can read also sets context.step,
-- its description for the scanner.
local function one_field(field)
  return function(v) return { { field, v } } end
end

local kind_patterns = {
  text = function(element, spec, context)
    local spans = context.spans and not context.options.json
    if not context.options.json then context.step = { kind = "text", field = spec.field } end
    return text_value(element, context), one_field(spec.field), spans
  end,
  word = function(element, spec, context)
    local value = word_value(context)
    if spec.nil_value then value = nil_value(context, context.spans) + value end
    context.step = { kind = "word", field = spec.field, nil_value = spec.nil_value }
    return value, one_field(spec.field), context.spans
  end,
  tag = function(element, spec, context)
    local programname_of = context.lookup("programname_of_tag",
                                          syslog.programname_of_tag[context.permit_slash])
    local procid_of = context.lookup("procid_of_tag", syslog.procid_of_tag)
    context.step = { kind = "tag", permit_slash = context.permit_slash }
    return C(syslog.tag), function(v)
      return { { "syslogtag", v },
               { "programname", format("%s[%s] or nil", programname_of, v) },
               { "procid", format("%s[%s] or nil", procid_of, v) } }
    end
  end,
  pri = function(element, spec, context)
    local pri_of = context.lookup("pri_of_text", syslog.pri_of_text)
    local facility_of = context.lookup("facility_of_pri_text", syslog.facility_of_pri_text)
    local severity_of = context.lookup("severity_of_pri_text", syslog.severity_of_pri_text)
    context.step = { kind = "pri" }
    return C(syslog.prival), function(v)
      return { { "pri", format("%s[%s]", pri_of, v) },
               { "syslogfacility", format("%s[%s]", facility_of, v) },
               { "syslogseverity", format("%s[%s]", severity_of, v) } }
    end
  end,
  facility = function()
    return C(P"1" * R"09" + P"2" * R"03" + R"09"),
           function(v) return { { "syslogfacility", "tonumber(" .. v .. ")" } } end
  end,
  facility_text = function()
    return syslog.facility_name, one_field("syslogfacility")
  end,
  severity = function()
    return C(R"07"), function(v) return { { "syslogseverity", "tonumber(" .. v .. ")" } } end
  end,
  severity_text = function()
    return syslog.severity_name, one_field("syslogseverity")
  end,
  number = function(element, spec)
    return C(R"09"^1), function(v) return { { spec.field, "tonumber(" .. v .. ")" } } end
  end,
  time = function(element, spec, context)
    local text, to_ns, chosen, zone = time_converter(context)
    if chosen == "rfc3164" then
      context.step = { kind = "time", field = spec.field, to_ns = to_ns,
                       fields_to_ns = date.rfc3164_fields_to_ns(zone, context.now) }
    end
    local name = context.lookup("to_ns_" .. element.position, to_ns)
    local call = type(to_ns) == "table" and "%s[%s]" or "%s(%s)"
    return C(text), function(v) return { { spec.field, format(call, name, v) } } end
  end,
  structured_data = function(element, spec, context)
    return nil_value(context) + C(syslog.sd_element^1), one_field(spec.field)
  end,
}
-- pri-text ("local0.err<131>") is read for the PRI inside the brackets.
kind_patterns.pri_text = function(element, spec, context)
  local pri, fields_of = kind_patterns.pri(element, spec, context)
  context.step = nil
  return (syslog.facility_name * "." * syslog.severity_name) / 0 * "<" * pri * ">", fields_of
end

-- The property's description: `properties` entry, or text for variables.
local function property_spec(element)
  local name = element.name
  if name:find("^%$[!./]") then return kind("text", name) end    -- $!json, $.local, $/global
  if name:find("^%$") then return kind("text", name:lower()) end  -- $now, $year, ...
  return properties[name:lower()]
    or build_error(element, "unknown property '%s'", name)
end

local function option_set(element, spec)
  local set = {}
  for _, option in ipairs(element.options) do
    local allowed = text_preserving[option]
      or (spec.kind == "time" and (date_formats[option] or option == "date-utc"))
      or (spec.kind == "text" and option == "json")
    if not allowed then build_error(element, "unsupported option '%s'", option) end
    set[option] = true
  end
  if element.from and element.from:find("^R") then
    build_error(element, "regular-expression extraction is not supported")
  end
  return set
end

-- The element's pattern, its fields_of function (nil when it captures
-- nothing) and whether its value is a record span.
local function element_pattern(element, context)
  if element.kind == "constant" then return P(element.text) end
  local spec = property_spec(element)
  context.options = option_set(element, spec)
  context.option_list = element.options
  if context.options["sp-if-no-1st-sp"] then
    context.step = { kind = "optional_space" }
    return P" "^-1
  end
  return kind_patterns[spec.kind](element, spec, context)
end

local function label(element)
  if element.kind == "constant" then
    return '"' .. element.text:gsub("\n", "\\n"):gsub("\t", "\\t") .. '"'
  end
  local options = #element.options > 0 and ":::" .. table.concat(element.options, ",") or ""
  return "%" .. element.name .. options .. "%"
end

-- The template's text for a built-in name, else the template itself.
function rsyslog.template_text(name_or_template)
  local builtin = rsyslog.templates[name_or_template]
  if builtin then return builtin end
  if type(name_or_template) == "string" and name_or_template:find("^RSYSLOG_[%w_]*$") then
    error(format("rsyslog template: unknown built-in template '%s'", name_or_template), 0)
  end
  return name_or_template
end

-- Writes the two assemblers, functions of the match's captures (its start
-- position, then one value per capturing element, or two positions for a
-- span: vN and wN, its value then span_N(vN, wN)) that put the values in
-- tables. For W3's template, with v1..v5 the pri, timestamp, hostname, tag
-- and msg texts:
--   assemble = function(position, v1, v2, v3, v4, v5)
--     if position == nil then return nil end
--     return { ["pri"] = pri_of_text[v1], ..., ["msg"] = v5 }
--   end
--   assemble_into = function(t, headers, position, v1, v2, v3, v4, v5)
--     if position == nil then return nil end
--     t["pri"] = pri_of_text[v1] ... headers["Payload"] = v5
--     return t
--   end
-- where header_of (a compile option) sends some fields to `headers` under
-- another name. One table constructor, or plain stores, compile well in
-- LuaJIT: LPeg's own table captures cost twice as much per line.
local function write_assemblers(fields_of_values, lookups, header_of)
  local parameters, fields = { "position" }, {}
  for i, value in ipairs(fields_of_values) do
    local v = "v" .. i
    parameters[#parameters + 1] = v
    if value.span then
      parameters[#parameters + 1] = "w" .. i
      v = format("%s(v%d, w%d)", value.span, i, i)
    end
    for _, field in ipairs(value.fields_of(v)) do fields[#fields + 1] = field end
  end
  local entries, stores, produces = {}, {}, {}
  for i, field in ipairs(fields) do
    local name, value = field[1], field[2]
    produces[name] = true
    entries[i] = format("[%q] = %s", name, value)
    if header_of[name] then
      stores[i] = format("headers[%q] = %s", header_of[name], value)
    else
      stores[i] = format("t[%q] = %s", name, value)
    end
  end
  local lines = { "local lookups = ..." }
  for name in pairs(lookups) do
    lines[#lines + 1] = format("local %s = lookups.%s", name, name)
  end
  local parameter_list = table.concat(parameters, ", ")
  lines[#lines + 1] = format([[
local function assemble(%s)
  if position == nil then return nil end
  return { %s }
end
local function assemble_into(t, headers, %s)
  if position == nil then return nil end
  %s
  return t
end
return assemble, assemble_into]], parameter_list, table.concat(entries, ",\n    "),
                                  parameter_list, table.concat(stores, "\n  "))
  local chunk = assert((loadstring or load)(table.concat(lines, "\n"), "=rsyslog assembler"))
  local assemble, assemble_into = chunk(lookups)
  return assemble, assemble_into, produces
end

-- The function an assembler calls with a span's positions: sets them in
-- the span and returns it, or nil for nil positions (a NILVALUE).
local function span_setter(span)
  return function(from, to)
    if from == nil then return nil end
    span[1], span[2] = from, to
    return span
  end
end

-- Compiles a template into:
--   pattern        LPeg pattern capturing the start position and raw values
--   assemble       function(pattern's captures) -> a new fields table, or nil
--                  when the pattern did not match:
--                    fields = assemble(lpeg.match(pattern, line))
--   assemble_into  function(t, headers, pattern's captures) -> t, or nil: sets
--                  every field the template makes (nil when absent) in t,
--                  or in headers for those options.header_of renames
--                  ({ msg = "Payload" }): for hot paths that reuse tables
--   produces       set of the field names the template makes
--   steps          the template's elements and patterns, for diagnostics
-- With options.spans, a function making a record span (the sandbox's
-- record_span), values written as is (text and words, not json) are spans
-- of the line, one per element, reused for every line, instead of strings:
-- no string is made for them.
-- With options.reader = { byte = record_byte, text = record_text, find =
-- record_find, stops = record_stops, span = record_span }, also, where
-- rsyslog.scanner reads every element:
--   scan           function(t, headers, length) -> t, or nil: assemble_into
--                  for the record that reader reads, with record spans for
--                  the tag's parts too (rsyslog/scanner.lua)
function rsyslog.compile(template_or_name, options)
  options = options or {}
  local elements = template.parse(rsyslog.template_text(template_or_name))
  local zone = options.tz or "UTC"
  if type(zone) == "string" then
    local err
    zone, err = date.zone(zone)
    if not zone then error("rsyslog template: " .. err, 0) end
  end

  local last = elements[#elements]
  local ends_with_newline = last.kind == "constant" and last.text:sub(-1) == "\n"
  if ends_with_newline then
    last.text = last.text:sub(1, -2)
    if last.text == "" then elements[#elements] = nil end
  end
  local record_end = ends_with_newline and P"\n"^-1 * -1 or -1

  local lookups = { tonumber = tonumber }
  local function lookup(name, value)
    lookups[name] = value
    return name
  end
  local steps, sequence, fields_of_values = {}, Cp(), {}
  local scan_steps = { ends_with_newline = ends_with_newline }
  for i, element in ipairs(elements) do
    local after = elements[i + 1]
    local literal = after and after.kind == "constant" and after.text or nil
    local context = {
      literal = literal,
      at_end = after == nil,
      following = literal and P(literal) or (after and P(true) or record_end),
      ends_with_newline = ends_with_newline,
      zone = zone, now = options.now,
      permit_slash = options.permit_slash_in_programname and true or false,
      lookup = lookup,
      spans = options.spans ~= nil,
    }
    local pattern, fields_of, span = element_pattern(element, context)
    local step = element.kind == "constant" and { kind = "constant", text = element.text }
                 or context.step
    if step and scan_steps then
      step.literal, step.at_end = literal, after == nil
      step.follows = literal and "literal" or (after and "any" or "end")
      scan_steps[#scan_steps + 1] = step
    else
      scan_steps = nil
    end
    if fields_of then
      fields_of_values[#fields_of_values + 1] = {
        fields_of = fields_of,
        span = span and lookup("span_" .. i, span_setter(options.spans())),
      }
    end
    steps[#steps + 1] = { pattern = pattern, label = label(element), position = element.position }
    sequence = sequence * pattern
  end
  steps[#steps + 1] = { pattern = record_end, label = "end of record" }

  local assemble, assemble_into, produces =
    write_assemblers(fields_of_values, lookups, options.header_of or {})
  local scan = options.reader and scan_steps
               and scanner.generate(scan_steps, options.reader, options.header_of or {})
  return { pattern = sequence * record_end, assemble = assemble,
           assemble_into = assemble_into, produces = produces, steps = steps, scan = scan }
end

local compiled_of_grammar = setmetatable({}, { __mode = "k" })

-- An LPeg pattern matching a whole line written with the template and
-- capturing the table of its properties (see the top of this file).
function rsyslog.build_grammar(template_or_name, options)
  local compiled = rsyslog.compile(template_or_name, options)
  local grammar = compiled.pattern / compiled.assemble
  compiled_of_grammar[grammar] = compiled
  return grammar
end

-- Why `record` does not match `grammar`: the template element that failed
-- and the byte where it was tried. Matches element by element, which gives
-- the same answer as the whole grammar since PEG sequences never backtrack
-- into an earlier element. For the error path only.
function rsyslog.mismatch_reason(compiled_or_grammar, record)
  local compiled = compiled_of_grammar[compiled_or_grammar] or compiled_or_grammar
  local steps = type(compiled) == "table" and compiled.steps
  if not steps then return "record does not match the template" end
  local at = 1
  for _, step in ipairs(steps) do
    local _, next_at = (Ct(step.pattern) * Cp()):match(record, at)
    if not next_at then
      local where = step.position and format(" (template position %d)", step.position) or ""
      return format("record does not match the template: expected %s%s at byte %d",
                    step.label, where, at)
    end
    at = next_at
  end
  return "record does not match the template"
end

return rsyslog
