dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local recent = require "recent"
local syslog = require "syslog"
local format = require "rsyslog.format"

local W3 = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\n"

local W3_MESSAGE = {
  Timestamp = 1779186617e9, Type = "syslog", Hostname = "snack", Severity = 4,
  Payload = "foo bar 32",
  Fields = { pri = 44, syslogfacility = 5, syslogtag = "jls:", programname = "jls" },
}

local function template_encoder(template, tz)
  return host.encoder("sandbox/encoders/template.lua", { template = template, tz = tz })
end

-- Asserts that `make()` gives the text os.date writes of the time it runs
-- with `date_format` (UTC, or `offset` seconds east): the $now properties
-- read the sandbox's clock, and a message without a Timestamp has the time
-- it was injected. A second may turn during the call: either side is right.
local function assert_now(date_format, make, offset)
  local before = os.time()
  local text = make()
  local after = os.time()
  local function at(t) return os.date("!" .. date_format, t + (offset or 0)) end
  if text ~= at(after) then assert.equal(at(before), text) end
end

-- The text `template` makes of `message`.
local function render(template, message, tz)
  return template_encoder(template, tz):encode(message)
end

local function load_error(template, tz)
  local ok, err = pcall(template_encoder, template, tz)
  assert.is_false(ok)
  return err
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
  return c
end

-- W3_MESSAGE with `changes` applied (Fields merged; false removes).
local function w3_with(changes)
  local message = copy(W3_MESSAGE)
  for k, v in pairs(changes) do
    if k == "Fields" then
      for name, value in pairs(v) do message.Fields[name] = value or nil end
    else
      message[k] = v or nil
    end
  end
  return message
end

describe("template encoder", function()
  it("writes W3's line, its final newline included", function()
    assert.equal("<44>May 19 10:30:17 snack jls: foo bar 32\n", render(W3, W3_MESSAGE))
    assert.equal("<44>May 19 18:30:17 snack jls: foo bar 32\n",
                 render(W3, W3_MESSAGE, "Asia/Shanghai"))
  end)

  it("knows rsyslog's built-in templates by name", function()
    assert.equal("May 19 10:30:17 snack jls: foo bar 32\n",
                 render("RSYSLOG_TraditionalFileFormat", W3_MESSAGE))
    assert.equal("2026-05-19T18:30:17+08:00 snack jls: foo bar 32\n",
                 render("RSYSLOG_FileFormat", W3_MESSAGE, "Asia/Shanghai"))
    assert.equal("<44>2026-05-19T10:30:17+00:00 snack jls: foo bar 32",
                 render("RSYSLOG_ForwardFormat", W3_MESSAGE))
    assert.equal("<44>1 2026-05-19T10:30:17+00:00 snack jls - - - foo bar 32\n",
                 render("RSYSLOG_SyslogProtocol23Format", W3_MESSAGE))
    assert.equal("May 19 10:30:17 snack jls: foo bar 32\n", render(nil, W3_MESSAGE))
  end)

  describe("properties", function()
    local FULL = {
      Timestamp = 1779186617123456e3, Hostname = "snack", Severity = 3, Pid = 1234,
      Payload = "hello\n", raw = "<131>May 19 10:30:17 snack app[1234]: hello",
      Fields = { pri = 131, syslogfacility = 16, syslogtag = "app[1234]:", programname = "app",
                 ["app-name"] = "appname", msgid = "ID47", ["structured-data"] = '[a@1 b="c"]',
                 ["fromhost-ip"] = "10.0.0.1", inputname = "tcp", ["protocol-version"] = 1,
                 timegenerated = 1779186618e9, user = "alice", Mixed = 7 },
    }
    local cases = {
      { "%msg%", "hello\n" }, { "%rawmsg%", FULL.raw },
      { "%hostname%", "snack" }, { "%source%", "snack" }, { "%HOSTNAME%", "snack" },
      { "%fromhost%", "10.0.0.1" }, { "%fromhost-ip%", "10.0.0.1" }, { "%inputname%", "tcp" },
      { "%syslogtag%", "app[1234]:" }, { "%programname%", "app" }, { "%app-name%", "appname" },
      { "%procid%", "1234" }, { "%msgid%", "ID47" }, { "%structured-data%", '[a@1 b="c"]' },
      { "%pri%", "131" }, { "%pri-text%", "local0.err" },
      { "%syslogfacility%", "16" }, { "%syslogfacility-text%", "local0" },
      { "%syslogseverity%", "3" }, { "%syslogseverity-text%", "err" },
      { "%syslogpriority%", "3" }, { "%syslogpriority-text%", "err" },
      { "%timestamp%", "May 19 10:30:17" }, { "%timereported%", "May 19 10:30:17" },
      { "%timegenerated%", "May 19 10:30:18" }, { "%protocol-version%", "1" }, { "%iut%", "1" },
      { "%$!user%", "alice" }, { "%$!Mixed%", "7" }, { "%$!absent%", "" },
    }
    for _, case in ipairs(cases) do
      it("writes " .. case[1], function()
        assert.equal(case[2], render(case[1], FULL))
      end)
    end
    -- The $now family: the sandbox's real clock, in os.date's terms.
    local now_cases = {
      { "%$now%", "%Y-%m-%d" }, { "%$year%", "%Y" }, { "%$month%", "%m" },
      { "%$day%", "%d" }, { "%$hour%", "%H" }, { "%$minute%", "%M" },
    }
    for _, case in ipairs(now_cases) do
      it("writes " .. case[1], function()
        assert_now(case[2], function() return render(case[1], FULL) end)
      end)
    end

    it("writes the $now family in tz, and in UTC with -utc", function()
      local encoder = template_encoder("%$now% %$hour%|%$now-utc% %$hour-utc%", "Asia/Shanghai")
      local text
      assert_now("%Y-%m-%d %H", function()
        text = encoder:encode(FULL)
        return text:match("^(.*)|")
      end, 8 * 3600)
      assert_now("%Y-%m-%d %H", function() return text:match("|(.*)$") end)
    end)

    it("falls back as rsyslog does when the message lacks a value", function()
      assert.equal("|||-|-|-|-|-|-|13|user.notice|1|5|notice|1",
                   render("%msg%|%hostname%|%fromhost%|%syslogtag%|%programname%|%app-name%|%procid%"
                          .. "|%msgid%|%structured-data%|%pri%|%pri-text%|%syslogfacility%"
                          .. "|%syslogseverity%|%syslogseverity-text%|%protocol-version%", {}))
      -- A message always has a Timestamp: inject_message stamped this one,
      -- which had none, with the time it was injected.
      assert_now("%b %e %H:%M:%S", function() return render("%timestamp%", {}) end)
    end)

    it("builds pri from syslogfacility and Severity, and the tag from app-name and procid", function()
      local message = { Severity = 2, Fields = { syslogfacility = 4, ["app-name"] = "su",
                                                 procid = "x7" } }
      assert.equal("34 auth.crit su[x7] su", render("%pri% %pri-text% %syslogtag% %programname%", message))
      assert.equal("su su", render("%syslogtag% %app-name%", { Fields = { ["app-name"] = "su" } }))
      assert.equal("app", render("%app-name%", { Fields = { programname = "app" } }))
    end)

    it("writes hostname as fromhost, and fromhost as fromhost-ip, when absent", function()
      assert.equal("10.0.0.1", render("%hostname%", { Fields = { ["fromhost-ip"] = "10.0.0.1" } }))
      assert.equal("gw", render("%hostname%", { Fields = { fromhost = "gw", ["fromhost-ip"] = "10.0.0.1" } }))
    end)

    it("writes rawmsg as the Payload when there is no original record", function()
      assert.equal("foo bar 32", render("%rawmsg%", W3_MESSAGE))
    end)

    it("builds structured-data from SD parameter fields", function()
      local message = { Fields = { ["ex@32473.iut"] = "3", ["ex@32473.eventSource"] = 'A"p]p\\',
                                   ["origin.ip"] = { "10.0.0.1", "10.0.0.2" },
                                   ["kubernetes.pod"] = "web", plain = "x" } }
      assert.equal('[ex@32473 eventSource="A\\"p\\]p\\\\" iut="3"][origin ip="10.0.0.1" ip="10.0.0.2"]',
                   render("%structured-data%", message))
    end)

    it("writes field values of every type as text", function()
      assert.equal("3 0.25 true", render("%$!n% %$!r% %$!b%",
                                           { Fields = { n = 3, r = 0.25, b = true } }))
    end)
  end)

  describe("dates", function()
    local MAY_9 = { Timestamp = 1778315162e9 }               -- 2026-05-09T08:26:02Z
    local FRACTION = { Timestamp = 1779186617000003e3 }      -- 2026-05-19T10:30:17.000003Z
    local cases = {
      { "%timestamp%", MAY_9, "May  9 08:26:02" },
      { "%timestamp:::date-rfc3164%", MAY_9, "May  9 08:26:02" },
      { "%timestamp:::date-rfc3164-buggyday%", MAY_9, "May 09 08:26:02" },
      { "%timestamp:::date-rfc3339%", MAY_9, "2026-05-09T08:26:02+00:00" },
      { "%timestamp:::date-rfc3339%", FRACTION, "2026-05-19T10:30:17.000003+00:00" },
      { "%timestamp:::date-mysql%", FRACTION, "20260519103017" },
      { "%timestamp:::date-pgsql%", FRACTION, "2026-05-19 10:30:17" },
      { "%timestamp:::date-unixtimestamp%", FRACTION, "1779186617" },
      { "%timestamp:::date-subseconds%", FRACTION, "000003" },
      { "%timestamp:::date-subseconds%", MAY_9, "0" },
      { "%timestamp:::date-year%-%timestamp:::date-month%-%timestamp:::date-day%T%timestamp:::date-hour%"
        .. ":%timestamp:::date-minute%:%timestamp:::date-second%", MAY_9, "2026-05-09T08:26:02" },
      { "%timestamp:::date-wday% %timestamp:::date-wdayname% %timestamp:::date-ordinal%", MAY_9,
        "6 Sat 129" },
    }
    for _, case in ipairs(cases) do
      it("writes " .. case[1] .. " as " .. case[3], function()
        assert.equal(case[3], render(case[1], case[2]))
      end)
    end

    it("writes dates in tz, with its offset and daylight saving time", function()
      assert.equal("2026-05-19T18:30:17.000003+08:00",
                   render("%timestamp:::date-rfc3339%", FRACTION, "Asia/Shanghai"))
      assert.equal("2026-05-19T12:30:17+02:00 +/02:00",
                   render("%timestamp:::date-rfc3339% %timestamp:::date-tzoffsdirection%/"
                          .. "%timestamp:::date-tzoffshour%:%timestamp:::date-tzoffsmin%",
                          W3_MESSAGE, "Europe/Berlin"))
      assert.equal("2026-01-15T05:00:00-05:00",
                   render("%timestamp:::date-rfc3339%", { Timestamp = 1768471200e9 }, "America/New_York"))
      assert.equal("-", render("%timestamp:::date-tzoffsdirection%", W3_MESSAGE, "America/New_York"))
    end)

    it("writes in UTC with date-utc whatever tz is", function()
      assert.equal("2026-05-19T10:30:17.000003+00:00 18",
                   render("%timestamp:::date-rfc3339,date-utc% %timestamp:::date-hour%", FRACTION,
                          "Asia/Shanghai"))
    end)

    it("writes timegenerated from its field, else from Timestamp", function()
      assert.equal("May 19 10:30:17", render("%timegenerated%", W3_MESSAGE))
      assert.equal("20260519103018", render("%timegenerated:::date-mysql%",
                                            w3_with({ Fields = { timegenerated = 1779186618e9 } })))
    end)

    it("writes a date per message when many share a second", function()
      local encoder = template_encoder("%timestamp:::date-rfc3339%")
      assert.equal("2026-05-19T10:30:17.250000+00:00", encoder:encode({ Timestamp = 1779186617250e6 }))
      assert.equal("2026-05-19T10:30:17.500000+00:00", encoder:encode({ Timestamp = 1779186617500e6 }))
      assert.equal("2026-05-19T10:30:18+00:00", encoder:encode({ Timestamp = 1779186618e9 }))
    end)
  end)

  describe("options", function()
    local function with_field(value) return { Fields = { v = value } } end
    -- rsyslog's own expectations (tests/template-property-transformations.sh).
    local cases = {
      { "%$!v:2:4%", "alphabet", "lph" },
      { "%$!v:4:2%", "alphabet", "lph" },                   -- swapped, as rsyslog does
      { "%$!v:1:999%", "alphabet", "alphabet" },
      { "%$!v:99:120%", "alphabet", "" },
      { "%$!v:3:$%", "alphabet", "phabet" },
      { "%$!v:1:5:fixed-width%|", "xy", "xy   |" },
      { "%$!v:3:1:pos-end-relative%", "alphabet", "bet" },
      { "%$!v:99:50:pos-end-relative%", "xy", "x" },
      { "%$!v:::uppercase%", "MiXeD", "MIXED" },
      { "%$!v:::lowercase%", "MiXeD", "mixed" },
      { "%$!v:::compressspace%", "a   b  c", "a b c" },
      { "%$!v:::drop-last-lf%", "tail\n", "tail" },
      { "%$!v:::drop-last-lf%", "tail\n\n", "tail\n" },
      { "<%$!v:::sp-if-no-1st-sp%>", "alphabet", "< >" },
      { "<%$!v:::sp-if-no-1st-sp%>", " lead", "<>" },
      { "<%$!v:::sp-if-no-1st-sp%>", "", "<>" },
      { "%$!v:::drop-cc%", "a\nb\tc", "abc" },
      { "%$!v:::space-cc%", "a\nb\tc", "a b c" },
      { "%$!v:::escape-cc%", "a\nb\tc\127", "a#010b#009c#127" },
      { "%$!v:::escape-cc,drop-cc%", "a\nb", "ab" },         -- the last one wins
      { "%$!v:::escape-cc,drop-last-lf%", "a\n", "a#010" },  -- LF is escaped, not dropped
      { "%$!v:::secpath-drop%", "a/b/c", "abc" },
      { "%$!v:::secpath-replace%", "a/b/c", "a_b_c" },
      { "%$!v:::secpath-drop%", "..", "_." },
      { "%$!v:::secpath-drop%", "/", "_" },
      { "%$!v:::csv%", 'a,"b"', '"a,""b"""' },
      { "%$!v:::json%", 'a \\ "b" / \n', 'a \\\\ \\"b\\" / \\n' },
      { "%$!v:::jsonf%", 'a \\ "b"', '"v":"a \\\\ \\"b\\""' },
      { "%$!v:::jsonf:Out%", "x", '"Out":"x"' },
      { "%$!v:1:3:uppercase,json%", 'a"bcd', 'A\\"B' },
      { "%$!v:::compressspace,csv%", 'a  "b"', '"a ""b"""' },
    }
    local function shown(s) return '"' .. s:gsub("%c", function(c) return ("\\%d"):format(c:byte()) end) .. '"' end
    for _, case in ipairs(cases) do
      it(case[1] .. " makes " .. shown(case[3]) .. " of " .. shown(case[2]), function()
        assert.equal(case[3], render(case[1], with_field(case[2])))
      end)
    end

    it("names jsonf's field after the property as written", function()
      assert.equal('{"msg":"foo bar 32","HOSTNAME":"snack"}',
                   render("{%msg:::jsonf%,%HOSTNAME:::jsonf%}", W3_MESSAGE))
    end)

    it("applies date options before substrings and case", function()
      assert.equal("MAY", render("%timestamp:1:3:uppercase%", W3_MESSAGE))
    end)
  end)

  describe("errors", function()
    local cases = {
      { "<%pri%> %nope%", "unknown property 'nope' (%nope% at position 9)" },
      { "%msg:::jsonr%", "unsupported option 'jsonr' (%msg% at position 1)" },
      { "%timestamp:::date-iso%", "unsupported option 'date-iso' (%timestamp% at position 1)" },
      { "%timestamp:::date-week%", "unsupported option 'date-week'" },
      { "x%msg:::json,csv%", "options 'json' and 'csv' exclude each other (%msg% at position 2)" },
      { "%msg:::date-rfc3339%", "option 'date-rfc3339' needs a time property (%msg% at position 1)" },
      { "%msg:R,ERE,1:x--end%", "regular-expression extraction is not supported" },
      { "%msg:F,44:2%", "field extraction is not supported (%msg% at position 1)" },
      { "%msg:1:x%", "malformed position 'x'" },
      { "%$.local%", "unknown property '$.local'" },
      { "%msg", "unterminated property" },
      { "RSYSLOG_Nonesuch", "unknown built-in template 'RSYSLOG_Nonesuch'" },
    }
    for _, case in ipairs(cases) do
      it("refuses " .. case[1], function()
        assert.matches(case[2], load_error(case[1]), 1, true)
      end)
    end

    it("refuses an unknown zone", function()
      assert.matches("unknown time zone 'Mars/Base'", load_error(W3, "Mars/Base"), 1, true)
    end)
  end)

  it("compiles to one function of read_message, usable outside encoders", function()
    local render_line = format.compile("%HOSTNAME% %msg:1:3%", { tz = "UTC" })
    local values = { Hostname = "snack", Payload = "foo bar" }
    assert.equal("snack foo", render_line(function(name) return values[name] end))
  end)
end)

-- Lines decoded with a template and written again with it come back the same.
describe("rsyslog decoder + template encoder round trip", function()
  -- bench/lib/gen_lines.py w3 10, with dates and tags made to vary more.
  local W3_LINES = {
    "<20>May 19 00:00:00 edge.example.org sshd[1041]: storage object batch mount trace user=u376 status=denied",
    "<28>May  9 07:05:00 snack jls[1048]: rate delay rule boot region status apply device fetch user=u167 status=ok",
    "<95>May 19 23:59:59 db-7 jls[1026]: success user send offset create commit table write route load",
    "<145>Dec 31 12:00:01 edge.example.org cron[1016]: warning packet range wait insert handle route answer",
    "<69>May 19 00:00:00 db-7 nginx: area expire region header lookup",
    "<133>Jan  1 00:00:00 snack kernel: profile match service network record driver running cluster code producer",
    "<0>May 20 01:02:03 web01 kernel[1033]: build storage deadline",
    "<191>May 19 00:00:00 web01 postfix/smtpd[1021]: retry resolve profile drain data",
    "<28>Apr 30 10:00:00 edge.example.org sshd[1021]: issue during rate connect reject pool address host control amount table user=u114 status=ok",
    "<91>May 19 00:00:00 snack kernel[1017]: create \"complete\" lock [commit] read daemon write health export deadline",
  }
  local FRACTIONS = { "", ".512345", ".000001", ".999999", "", ".100000", ".250000", "", ".000100", ".123456" }

  local function round_trip(template, lines)
    local decoder = host.decoder("sandbox/decoders/rsyslog.lua", { template = template, tz = "Asia/Shanghai" })
    local encoder = template_encoder(template, "Asia/Shanghai")
    for _, line in ipairs(lines) do
      local rc, err, messages = decoder:decode(line)
      assert.equal(0, rc, err)
      assert.equal(line .. "\n", encoder:encode(messages[1]))
    end
  end

  it("gives W3's lines back", function()
    round_trip(W3, W3_LINES)
  end)

  it("gives RSYSLOG_FileFormat's lines back", function()
    local month_numbers = { Jan = 1, Apr = 4, May = 5, Dec = 12 }
    local lines = {}
    for i, line in ipairs(W3_LINES) do
      local month, day, clock, rest = line:match("^<%d+>(%a+) +(%d+) (%S+) (.*)$")
      local year = month == "Dec" and 2025 or 2026
      lines[i] = string.format("%d-%02d-%02dT%s%s+08:00 %s", year, month_numbers[month],
                               tonumber(day), clock, FRACTIONS[i], rest)
    end
    round_trip("RSYSLOG_FileFormat", lines)
  end)
end)

describe("rfc5424 encoder", function()
  local function encoder(settings) return host.encoder("sandbox/encoders/rfc5424.lua", settings) end
  -- A message always has a Timestamp (inject_message stamps one left out
  -- with the time of injection): the cases without one of their own are
  -- given T, so that their lines are known.
  local T, T_TEXT = 1779186617e9, "2026-05-19T10:30:17.000000Z"
  local function encode(message, settings)
    if message.Timestamp == nil then message.Timestamp = T end
    return encoder(settings):encode(message)
  end
  local function load_error(settings)
    local ok, err = pcall(encoder, settings)
    assert.is_false(ok)
    return err
  end

  it("writes W3's message as RFC 5424", function()
    assert.equal("<44>1 2026-05-19T10:30:17.000000Z snack jls - - - foo bar 32", encode(W3_MESSAGE))
  end)

  it("writes what the rsyslog decoder makes of a W3 line, the pid as PROCID", function()
    local decoder = host.decoder("sandbox/decoders/rsyslog.lua", { template = W3, tz = "Asia/Shanghai" })
    local _, _, messages = decoder:decode("<38>May 19 18:30:17 snack sshd[1234]: Accepted publickey")
    -- The year is the one the decoder infers today (spec/modules/recent.lua).
    assert.equal("<38>1 " .. recent.year(5, 19, 18, 30, 17, 8 * 3600)
                 .. "-05-19T18:30:17.000000+08:00 snack sshd 1234 - - Accepted publickey",
                 encode(messages[1], { tz = "Asia/Shanghai" }))
  end)

  it("writes every header of an RFC 5424 message", function()
    local message = {
      Timestamp = 1779186617123456e3, Hostname = "mymachine.example.com", Severity = 2,
      Payload = "'su root' failed for lonvick on /dev/pts/8",
      Fields = { pri = 34, ["app-name"] = "su", procid = "x7", msgid = "ID47",
                 ["structured-data"] = '[exampleSDID@32473 iut="3" eventSource="Application"]' },
    }
    assert.equal('<34>1 2026-05-19T10:30:17.123456Z mymachine.example.com su x7 ID47 '
                 .. '[exampleSDID@32473 iut="3" eventSource="Application"] '
                 .. "'su root' failed for lonvick on /dev/pts/8", encode(message))
  end)

  it("makes PRI from syslogfacility and Severity, else from the default settings", function()
    assert.equal("<20>", encode({ Severity = 4, Fields = { syslogfacility = 2 } }):sub(1, 4))
    assert.equal("<13>", encode({}):sub(1, 4))
    assert.equal("<131>", encode({}, { default_facility = "local0", default_severity = "err" }):sub(1, 5))
    assert.equal("<130>", encode({ Severity = 2 }, { default_facility = 16 }):sub(1, 5))
    assert.equal("<44>", encode({ Severity = 9, Fields = { syslogfacility = 5 } },
                                { default_severity = "warning" }):sub(1, 4))
  end)

  it("refuses unknown default facilities and severities", function()
    assert.matches("rfc5424 encoder: default_facility: unknown value 'nonesuch'",
                   load_error({ default_facility = "nonesuch" }), 1, true)
    assert.matches("rfc5424 encoder: default_severity: unknown value '8'",
                   load_error({ default_severity = 8 }), 1, true)
  end)

  it("writes - for what is absent, the hostname setting for a missing Hostname", function()
    assert.equal("<13>1 " .. T_TEXT .. " - - - - -", encode({}))
    assert.equal("<13>1 " .. T_TEXT .. " relay - - - -", encode({}, { hostname = "relay" }))
    assert.equal("<13>1 " .. T_TEXT .. " - - - - - x", encode({ Payload = "x" }))
    -- TIMESTAMP is never absent: a message without one has the time it was
    -- injected (encoder():encode, unlike encode, leaves it out).
    assert_now("%Y-%m-%dT%H:%M:%S", function()
      return encoder():encode({}):match("^<13>1 (%d+%-%d+%-%d+T%d+:%d+:%d+)%.%d+Z %- %- %- %- %-$")
    end)
  end)

  it("writes TIMESTAMP in tz", function()
    assert.equal("<13>1 2026-05-19T18:30:17.000000+08:00 - - - - -",
                 encode({ Timestamp = 1779186617e9 }, { tz = "Asia/Shanghai" }))
    assert.matches("Mars/Base", load_error({ tz = "Mars/Base" }), 1, true)
  end)

  it("keeps header fields within RFC 5424's characters and lengths", function()
    local message = { Hostname = "my host\1" .. string.rep("h", 300), Pid = 42,
                      Fields = { ["app-name"] = "my app" .. string.rep("a", 60), msgid = "ID\22047",
                                 procid = "p" } }
    local line = encode(message)
    local hostname, app_name, procid, msgid = line:match("^<13>1 %S+ (%S+) (%S+) (%S+) (%S+) %-$")
    assert.equal("my_host_" .. string.rep("h", 247), hostname)
    assert.equal("my_app" .. string.rep("a", 42), app_name)
    assert.equal("42", procid)
    assert.equal("ID_47", msgid)
    assert.equal(255, #hostname)
    assert.equal(48, #app_name)
    local long = encode({ Fields = { procid = string.rep("p", 200), msgid = string.rep("m", 40) } })
    assert.equal("<13>1 " .. T_TEXT .. " - - " .. string.rep("p", 128) .. " " .. string.rep("m", 32) .. " -",
                 long)
  end)

  it("builds STRUCTURED-DATA from SD parameter fields, escaped", function()
    local message = { Fields = { ["ex@32473.iut"] = 3, ["ex@32473.src"] = 'q"b\\s]',
                                 ["meta.sequenceId"] = "1", ["kubernetes.pod"] = "web",
                                 ["a b@1.x"] = "not an SD-ID", path = "/var/log/x" } }
    assert.equal('<13>1 ' .. T_TEXT .. ' - - - - [ex@32473 iut="3" src="q\\"b\\\\s\\]"][meta sequenceId="1"]',
                 encode(message))
  end)

  it("writes - for STRUCTURED-DATA without its field when told not to build it", function()
    assert.equal("<13>1 " .. T_TEXT .. " - - - - -", encode({ Fields = { ["meta.sequenceId"] = "1" } },
                                                             { structured_data_from_fields = false }))
    assert.equal('<13>1 ' .. T_TEXT .. ' - - - - [a@1 b="c"]',
                 encode({ Fields = { ["structured-data"] = '[a@1 b="c"]' } },
                        { structured_data_from_fields = false }))
  end)

  it("reads back with syslog.lua's RFC 5424 grammar", function()
    local message = { Timestamp = 1779186617123456e3, Hostname = "snack", Severity = 6, Pid = 99,
                      Payload = "hello [world]",
                      Fields = { syslogfacility = 3, programname = "jls", ["origin.ip"] = "10.0.0.1",
                                 ["x@1.quote"] = 'say "hi" \\ ]' } }
    local parsed = syslog.rfc5424("UTC"):match(encode(message, { bom = true }))
    assert.same({ pri = 30, syslogfacility = 3, syslogseverity = 6, ["protocol-version"] = 1,
                  timestamp = 1779186617123456e3, hostname = "snack", ["app-name"] = "jls",
                  procid = "99", ["structured-data"] = '[origin ip="10.0.0.1"][x@1 quote="say \\"hi\\" \\\\ \\]"]',
                  msg = "hello [world]" }, parsed)
    local sd = syslog.structured_data_table:match(parsed["structured-data"])
    assert.same({ origin = { ip = "10.0.0.1" }, ["x@1"] = { quote = 'say "hi" \\ ]' } }, sd)
  end)

  it("prefixes MSG with a BOM when asked", function()
    assert.equal("<13>1 " .. T_TEXT .. " - - - - - \239\187\191x", encode({ Payload = "x" }, { bom = true }))
    assert.equal("<13>1 " .. T_TEXT .. " - - - - -", encode({}, { bom = true }))
  end)

  it("counts octets for RFC 6587 framing when asked", function()
    local line = encode({ Payload = "日志 x" }, { octet_counted = true })
    assert.equal("52 <13>1 " .. T_TEXT .. " - - - - - 日志 x", line)
    assert.equal(52, #line:match("^%d+ (.*)$"))
  end)
end)
