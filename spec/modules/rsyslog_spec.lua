dofile("spec/modules/spec_helper.lua")
local lpeg = require "lpeg"
local rsyslog = require "rsyslog"
local template = require "rsyslog.template"

local W3 = "<%pri%>%TIMESTAMP% %HOSTNAME% %syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n"
local MAY_20_2026 = function() return 1779235200 end

local function grammar(tpl, tz)
  return rsyslog.build_grammar(tpl, { tz = tz or "UTC", now = MAY_20_2026 })
end

describe("rsyslog.template.parse", function()
  it("splits constants and properties, with positions", function()
    local parsed = template.parse("<%PRI%>%TIMESTAMP:::date-rfc3339% %syslogtag:1:32%")
    assert.same({ kind = "constant", text = "<", position = 1, options = {} }, parsed[1])
    assert.same({ kind = "property", name = "PRI", position = 2, options = {} }, parsed[2])
    assert.same({ kind = "property", name = "TIMESTAMP", position = 8, from = "", to = "",
                  options = { "date-rfc3339" } }, parsed[4])
    assert.same({ kind = "property", name = "syslogtag", position = 35, from = "1", to = "32",
                  options = {} }, parsed[6])
  end)

  it("expands rsyslog's escapes in constants", function()
    local parsed = template.parse([[a\n\t\\\%\"\044%msg%\]])
    assert.equal('a\n\t\\%",', parsed[1].text)
    assert.equal("\\", parsed[3].text)
  end)

  it("lower-cases and splits options", function()
    assert.same({ "date-rfc3339", "date-utc" },
                template.parse("%timestamp:::Date-RFC3339,DATE-UTC%")[1].options)
  end)

  it("names the position of malformed templates", function()
    assert.has_error(function() template.parse("abc %msg") end,
      'rsyslog template: unterminated property (no closing %) at position 5 in "abc %msg"')
    assert.has_error(function() template.parse("x%%") end,
      'rsyslog template: empty property name at position 2 in "x%%"')
    assert.has_error(function() template.parse("%msg:1%") end,
      'rsyslog template: malformed property (expected %name:from:to:options%) at position 1 in "%msg:1%"')
    assert.has_error(function() template.parse("") end,
      "rsyslog template: expected a non-empty template string")
  end)
end)

describe("rsyslog grammar for W3's template", function()
  local w3 = grammar(W3, "Asia/Shanghai")

  it("reads W3's line", function()
    assert.same({ pri = 44, syslogfacility = 5, syslogseverity = 4, timestamp = 1779186617e9,
                  hostname = "snack", syslogtag = "jls:", programname = "jls", msg = "foo bar 32" },
                w3:match("<44>May 19 18:30:17 snack jls: foo bar 32"))
  end)

  it("accepts the record with or without its newline", function()
    assert.equal("foo bar 32", w3:match("<44>May 19 18:30:17 snack jls: foo bar 32\n").msg)
  end)

  it("reads tags with pids, and day numbers padded with a space", function()
    local t = w3:match("<38>May  9 08:01:02 snack sshd[1234]: Accepted publickey for alice from 192.0.2.7 port 51234 ssh2")
    assert.equal("sshd", t.programname)
    assert.equal("1234", t.procid)
    assert.equal("Accepted publickey for alice from 192.0.2.7 port 51234 ssh2", t.msg)
    assert.equal(6, t.syslogseverity)
  end)

  it("keeps one of two leading spaces, as sp-if-no-1st-sp wrote them", function()
    assert.equal(" indented", w3:match("<44>May 19 18:30:17 snack jls:  indented").msg)
  end)

  it("reads a missing tag as rsyslog does: the first word", function()
    local t = w3:match("<44>May 19 18:30:17 snack foo bar 32")
    assert.equal("foo", t.syslogtag)
    assert.equal("bar 32", t.msg)
  end)

  it("reads an empty message", function()
    assert.equal("", w3:match("<44>May 19 18:30:17 snack jls:").msg)
  end)

  it("does not match other lines", function()
    assert.is_nil(w3:match("May 19 18:30:17 snack jls: no pri"))
    assert.is_nil(w3:match("<200>May 19 18:30:17 snack jls: bad pri"))
    assert.is_nil(w3:match("<44>2026-05-19T18:30:17 snack jls: wrong date"))
  end)
end)

describe("rsyslog built-in templates", function()
  it("reads RSYSLOG_TraditionalFileFormat (the default file format)", function()
    local g = grammar("RSYSLOG_TraditionalFileFormat")
    local t = g:match("May 19 10:30:01 snack CRON[4321]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)")
    assert.same({ timestamp = 1779186601e9, hostname = "snack", syslogtag = "CRON[4321]:",
                  programname = "CRON", procid = "4321",
                  msg = "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)" }, t)
    t = g:match("May 19 10:30:17 snack kernel: [  123.456789] usb 1-1: new high-speed USB device number 2 using xhci_hcd")
    assert.equal("kernel", t.programname)
    assert.equal("[  123.456789] usb 1-1: new high-speed USB device number 2 using xhci_hcd", t.msg)
  end)

  it("reads RSYSLOG_FileFormat (RFC 3339 timestamps)", function()
    local t = grammar("RSYSLOG_FileFormat"):match(
      "2026-05-19T18:30:17.512345+08:00 snack systemd[1]: Started Session 5 of user alice.")
    assert.equal("2026-05-19T10:30:17.512Z", require("date").iso8601_utc_ms(t.timestamp))
    assert.equal("systemd", t.programname)
    assert.equal("1", t.procid)
    assert.equal("Started Session 5 of user alice.", t.msg)
  end)

  it("reads RSYSLOG_TraditionalForwardFormat and RSYSLOG_ForwardFormat", function()
    local t = grammar("RSYSLOG_TraditionalForwardFormat"):match(
      "<86>May 19 10:30:17 snack sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/true")
    assert.equal(10, t.syslogfacility)
    assert.equal("sudo:", t.syslogtag)
    assert.equal("   alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/true", t.msg)
    t = grammar("RSYSLOG_ForwardFormat"):match(
      "<30>2026-05-19T10:30:17.000001Z snack dbus-daemon[612]: [system] Successfully activated service")
    assert.equal("dbus-daemon", t.programname)
    assert.equal("612", t.procid)
  end)

  it("reads RSYSLOG_SyslogProtocol23Format (RFC 5424)", function()
    local g = grammar("RSYSLOG_SyslogProtocol23Format")
    local t = g:match('<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 '
      .. '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] An application event log entry...')
    assert.same({ pri = 165, syslogfacility = 20, syslogseverity = 5, timestamp = 1065910455003e6,
                  hostname = "mymachine.example.com", ["app-name"] = "evntslog", msgid = "ID47",
                  ["structured-data"] = '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"]',
                  msg = "An application event log entry..." }, t)
    t = g:match("<13>1 2026-05-19T18:30:17.512345+08:00 snack alice 4242 - - hello\n")
    assert.equal("4242", t.procid)
    assert.is_nil(t.msgid)
    assert.is_nil(t["structured-data"])
    assert.equal("hello", t.msg)
  end)

  it("reads RSYSLOG_SysklogdFileFormat", function()
    assert.equal("hi", grammar("RSYSLOG_SysklogdFileFormat"):match("May 19 10:30:17 snack jls: hi").msg)
  end)
end)

describe("rsyslog properties and options", function()
  it("reads the -text forms, case-insensitively, as numbers", function()
    local t = grammar("%pri-text% %syslogfacility-text:::uppercase% %syslogseverity-text% %msg%")
      :match("local0.err<131> LOCAL0 err boom")
    assert.same({ pri = 131, syslogfacility = 16, syslogseverity = 3, msg = "boom" }, t)
    t = grammar("%syslogfacility%,%syslogpriority%,%msg%"):match("23,7,x")
    assert.same({ syslogfacility = 23, syslogseverity = 7, msg = "x" }, t)
  end)

  it("reads words up to the next constant and free text up to it", function()
    local t = grammar("%fromhost-ip%|%inputname%|%programname%[%procid%]: %$!usr!name% said %msg%")
      :match("192.0.2.7|imtcp|nginx[88]: bob smith said hello there")
    assert.same({ ["fromhost-ip"] = "192.0.2.7", inputname = "imtcp", programname = "nginx",
                  procid = "88", ["$!usr!name"] = "bob smith", msg = "hello there" }, t)
  end)

  it("folds aliases: source, timereported, APP-NAME, $NOW", function()
    local t = grammar("%source% %timereported:::date-rfc3339% %APP-NAME% %$NOW% %iut% %protocol-version%")
      :match("snack 2026-05-19T10:30:17Z app 2026-05-19 1 1")
    assert.same({ hostname = "snack", timestamp = 1779186617e9, ["app-name"] = "app",
                  ["$now"] = "2026-05-19", iut = 1, ["protocol-version"] = 1 }, t)
  end)

  it("reads the date formats rsyslog writes", function()
    local function ts(tpl, line) return grammar(tpl, "+08:00"):match(line).timestamp end
    assert.equal(1779186617e9, ts("%timestamp:::date-mysql%", "20260519183017"))
    assert.equal(1779186617e9, ts("%timestamp:::date-pgsql%", "2026-05-19 18:30:17"))
    assert.equal(1779186617e9, ts("%timestamp:::date-unixtimestamp%", "1779186617"))
    assert.equal(1779186617e9, ts("%timestamp:::date-rfc3164-buggyday%", "May 19 18:30:17"))
    assert.equal(1779186617e9, ts("%timestamp:::date-pgsql,date-utc%", "2026-05-19 10:30:17"))
    assert.same({ timegenerated = 1779186617e9, msg = "x" },
                grammar("%timegenerated:::date-rfc3339% %msg%"):match("2026-05-19T10:30:17Z x"))
  end)

  it("unescapes json-escaped values", function()
    local t = grammar('{"msg":"%msg:::json%","host":"%hostname%"}')
      :match('{"msg":"say \\"hi\\"\\n\\u00e9","host":"snack"}')
    assert.same({ msg = 'say "hi"\n\195\169', hostname = "snack" }, t)
  end)

  it("accepts options that keep text as written", function()
    local t = grammar("%hostname:::lowercase% %msg:::escape-cc,space-cc%"):match("snack a#011b")
    assert.same({ hostname = "snack", msg = "a#011b" }, t)
  end)

  it("reads programname with slashes when asked", function()
    local g = rsyslog.build_grammar("%syslogtag%%msg:::sp-if-no-1st-sp%%msg%",
                                    { permit_slash_in_programname = true })
    assert.equal("postfix/smtpd", g:match("postfix/smtpd[2231]: connect").programname)
  end)
end)

describe("rsyslog template errors", function()
  local function build_error(tpl, options)
    local ok, err = pcall(rsyslog.build_grammar, tpl, options)
    assert.is_false(ok)
    return err
  end

  it("names unknown properties and their position", function()
    assert.equal("rsyslog template: unknown property 'hostnam' (%hostnam% at position 7)",
                 build_error("%msg% %hostnam% x"))
  end)

  it("rejects unsupported options and regular expressions", function()
    assert.equal("rsyslog template: unsupported option 'csv' (%msg% at position 1)",
                 build_error("%msg:::csv%"))
    assert.equal("rsyslog template: unsupported option 'date-rfc3339' (%hostname% at position 1)",
                 build_error("%hostname:::date-rfc3339%"))
    assert.equal("rsyslog template: regular-expression extraction is not supported (%msg% at position 1)",
                 build_error("%msg:R,ERE,1,DFLT:x--end%"))
  end)

  it("rejects free text that has no end", function()
    assert.equal("rsyslog template: free text must be followed by constant text or end the template"
                 .. " (%msg% at position 1)", build_error("%msg%%hostname%"))
  end)

  it("rejects unknown built-in names and zones", function()
    assert.equal("rsyslog template: unknown built-in template 'RSYSLOG_Nope'", build_error("RSYSLOG_Nope"))
    assert.matches("unknown time zone 'Nowhere/City'", build_error(W3, { tz = "Nowhere/City" }))
  end)
end)

describe("rsyslog.mismatch_reason", function()
  local w3 = grammar(W3, "Asia/Shanghai")

  it("names the element that failed and the byte", function()
    assert.equal('record does not match the template: expected "<" (template position 1) at byte 1',
                 rsyslog.mismatch_reason(w3, "May 19 18:30:17 snack jls: x"))
    assert.equal('record does not match the template: expected %TIMESTAMP% (template position 8) at byte 5',
                 rsyslog.mismatch_reason(w3, "<44>2026-05-19 snack jls: x"))
    assert.equal('record does not match the template: expected " " (template position 19) at byte 20',
                 rsyslog.mismatch_reason(w3, "<44>May 19 18:30:17"))
    assert.equal('record does not match the template: expected ">" (template position 7) at byte 4',
                 rsyslog.mismatch_reason(w3, "<444>May 19 18:30:17 snack jls: x"))
  end)

  it("works from a compiled template too", function()
    local compiled = rsyslog.compile("%hostname% %msg%")
    assert.is_nil(compiled.assemble(lpeg.match(compiled.pattern, "nospace")))
    assert.equal('record does not match the template: expected " " (template position 11) at byte 8',
                 rsyslog.mismatch_reason(compiled, "nospace"))
  end)
end)

describe("rsyslog.compile", function()
  it("fills reused tables, sending renamed fields to the headers table", function()
    local compiled = rsyslog.compile(W3, { tz = "Asia/Shanghai", now = MAY_20_2026,
                                           header_of = { msg = "Payload", hostname = "Hostname" } })
    local fields, headers = {}, {}
    local line = "<44>May 19 18:30:17 snack jls: foo bar 32"
    assert.equal(fields, compiled.assemble_into(fields, headers, lpeg.match(compiled.pattern, line)))
    assert.same({ Payload = "foo bar 32", Hostname = "snack" }, headers)
    assert.same({ pri = 44, syslogfacility = 5, syslogseverity = 4, timestamp = 1779186617e9,
                  syslogtag = "jls:", programname = "jls" }, fields)
    assert.is_true(compiled.produces.procid)
    assert.is_nil(compiled.produces.timegenerated)
  end)

  it("gives text and words as spans of the line with the spans option", function()
    local made = 0
    local function span() made = made + 1 return {} end
    local compiled = rsyslog.compile(rsyslog.templates.RSYSLOG_SyslogProtocol23Format,
                                     { header_of = { msg = "Payload" }, spans = span })
    local fields, headers = {}, {}
    local function text(value, line) return line:sub(value[1], value[2] - 1) end
    local line = "<13>1 2026-05-19T10:30:17Z snack alice 4242 - - hello there"
    compiled.assemble_into(fields, headers, lpeg.match(compiled.pattern, line))
    assert.equal("hello there", text(headers.Payload, line))
    assert.equal("snack", text(fields.hostname, line))
    assert.equal("alice", text(fields["app-name"], line))
    assert.equal("4242", text(fields.procid, line))
    assert.is_nil(fields.msgid)              -- "-": nil, not a span
    assert.equal(13, fields.pri)             -- converted values stay values
    -- One span per element, made once and reused for every line.
    local payload = headers.Payload
    line = "<13>1 2026-05-19T10:30:17Z - alice 1 ID7 - bye"
    compiled.assemble_into(fields, headers, lpeg.match(compiled.pattern, line))
    assert.equal(payload, headers.Payload)
    assert.equal("bye", text(headers.Payload, line))
    assert.is_nil(fields.hostname)
    assert.equal("ID7", text(fields.msgid, line))
    assert.equal(5, made)  -- HOSTNAME, APP-NAME, PROCID, MSGID, msg
  end)
end)

describe("rsyslog properties a syslog receiver's templates use", function()
  it("reads %pri%, %TIMESTAMP%, %HOSTNAME%, %programname%, %procid% and %msg%", function()
    local t = grammar("<%pri%>%TIMESTAMP% %HOSTNAME% %programname%[%procid%]: %msg%")
      :match("<86>May  9 08:01:02 snack sudo[77]: alice : TTY=pts/0")
    assert.same({ pri = 86, syslogfacility = 10, syslogseverity = 6, timestamp = 1778313662e9,
                  hostname = "snack", programname = "sudo", procid = "77",
                  msg = "alice : TTY=pts/0" }, t)
  end)

  it("reads %timegenerated% beside %timereported%", function()
    local t = grammar("%timegenerated:::date-rfc3339% %TIMESTAMP% %msg%")
      :match("2026-05-19T10:30:18.5Z May 19 10:30:17 x")
    assert.equal(1779186618.5e9, t.timegenerated)
    assert.equal(1779186617e9, t.timestamp)
  end)

  it("reads %syslogtag% followed by sp-if-no-1st-sp, with or without the space", function()
    local g = grammar("%syslogtag%%msg:::sp-if-no-1st-sp%%msg%")
    assert.same({ syslogtag = "jls:", programname = "jls", msg = "x" }, g:match("jls: x"))
    assert.same({ syslogtag = "jls:", programname = "jls", msg = "x" }, g:match("jls:x"))
  end)

  it("reads a msg written with drop-last-lf as written", function()
    local g = grammar("%HOSTNAME% %msg:::drop-last-lf%\\n")
    assert.equal("two\nlines", g:match("snack two\nlines\n").msg)
    -- Without the template's newline, a final newline is one the msg kept.
    g = grammar("%HOSTNAME% %msg:::drop-last-lf%")
    assert.equal("two\nlines\n", g:match("snack two\nlines\n").msg)
    assert.equal("two\nlines", g:match("snack two\nlines").msg)
  end)

  it("reads every date option rsyslog writes a full time with", function()
    local function ts(option, text)
      return grammar("%TIMESTAMP:::" .. option .. "% %msg%", "+08:00"):match(text .. " x").timestamp
    end
    assert.equal(1779186617e9, ts("date-rfc3164", "May 19 18:30:17"))
    assert.equal(1778322317e9, ts("date-rfc3164-buggyday", "May 09 18:25:17"))
    assert.equal(1779186617.25e9, ts("date-rfc3339", "2026-05-19T18:30:17.25+08:00"))
    assert.equal(1779186617e9, ts("date-rfc3339,date-utc", "2026-05-19T10:30:17Z"))
    assert.equal(1779186617e9, ts("date-mysql", "20260519183017"))
    assert.equal(1779186617e9, ts("date-pgsql", "2026-05-19 18:30:17"))
    assert.equal(1779186617e9, ts("date-unixtimestamp", "1779186617"))
  end)
end)
