dofile("spec/modules/spec_helper.lua")
local lpeg = require "lpeg"
local syslog = require "syslog"

local Ct = lpeg.Ct
local MAY_20_2026 = function() return 1779235200 end

describe("syslog PRI", function()
  it("reads <PRI> as a number", function()
    assert.equal(44, syslog.pri:match("<44>"))
    assert.equal(0, syslog.pri:match("<0>"))
    assert.equal(191, syslog.pri:match("<191>"))
    assert.is_nil(syslog.pri:match("<192>"))
    assert.is_nil(syslog.pri:match("<044>"))
    assert.is_nil(syslog.pri:match("<>"))
  end)

  it("splits a PRI into facility and severity", function()
    assert.same({ pri = 44, syslogfacility = 5, syslogseverity = 4 },
                Ct(syslog.pri_fields):match("44"))
    assert.same({ pri = 165, syslogfacility = 20, syslogseverity = 5 },
                Ct(syslog.pri_fields):match("165"))
  end)

  it("reads rsyslog's pri-text", function()
    assert.same({ pri = 131, syslogfacility = 16, syslogseverity = 3 },
                Ct(syslog.pri_text_fields):match("local0.err<131>"))
  end)
end)

describe("syslog names", function()
  it("names facilities and severities as rsyslog does", function()
    assert.equal("local0", syslog.facility_names[16])
    assert.equal("authpriv", syslog.facility_names[10])
    assert.equal("warning", syslog.severity_names[4])
    assert.equal("emerg", syslog.severity_names[0])
  end)

  it("reads names, longest first and in any case, with aliases", function()
    assert.equal(10, syslog.facility_name:match("authpriv"))
    assert.equal(4, syslog.facility_name:match("auth"))
    assert.equal(4, syslog.facility_name:match("security"))
    assert.equal(3, syslog.severity_name:match("ERR"))
    assert.equal(3, syslog.severity_name:match("error"))
    assert.equal(4, syslog.severity_name:match("warn"))
    assert.is_nil(syslog.severity_name:match("loud"))
  end)
end)

describe("syslog tags", function()
  local tag = Ct(syslog.tag_fields())

  it("reads programname and pid from the tag", function()
    assert.same({ syslogtag = "sshd[123]:", programname = "sshd", procid = "123" },
                tag:match("sshd[123]: Accepted"))
    assert.same({ syslogtag = "jls:", programname = "jls" }, tag:match("jls: foo bar 32"))
    assert.same({ syslogtag = "CRON[4321]:", programname = "CRON", procid = "4321" },
                tag:match("CRON[4321]: (root) CMD (true)"))
  end)

  it("ends a tag without a colon at the space", function()
    assert.same({ syslogtag = "kernel", programname = "kernel" }, tag:match("kernel foo"))
    assert.same({ syslogtag = "sshd[7]", programname = "sshd", procid = "7" }, tag:match("sshd[7] x"))
  end)

  it("stops programname at '/' unless asked not to, as rsyslog does", function()
    assert.same({ syslogtag = "postfix/smtpd[2231]:", programname = "postfix", procid = "2231" },
                tag:match("postfix/smtpd[2231]: connect"))
    assert.same({ syslogtag = "postfix/smtpd[2231]:", programname = "postfix/smtpd", procid = "2231" },
                Ct(syslog.tag_fields(true)):match("postfix/smtpd[2231]: connect"))
  end)

  it("leaves out what a tag does not have", function()
    assert.same({ syslogtag = "[12]:" }, tag:match("[12]: odd"))
    assert.same({ syslogtag = ":" }, tag:match(": empty"))
    assert.same({ "sshd", "99" }, { syslog.split_tag("sshd[99]:") })
  end)
end)

describe("syslog structured data", function()
  it("matches SD elements or NILVALUE", function()
    assert.truthy(syslog.structured_data:match("-"))
    assert.truthy(syslog.structured_data:match('[exampleSDID@32473 iut="3" eventSource="Application"]'))
    assert.is_nil(syslog.structured_data:match('[broken'))
  end)

  it("reads SD into a table, unescaping values", function()
    local sd = syslog.structured_data_table:match(
      '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]')
    assert.same({ ["exampleSDID@32473"] = { iut = "3", eventSource = "Application", eventID = "1011" },
                  ["examplePriority@32473"] = { class = "high" } }, sd)
    assert.same({ ["x@1"] = { q = 'say "hi" \\ [ok]' } },
                syslog.structured_data_table:match('[x@1 q="say \\"hi\\" \\\\ [ok\\]"]'))
    assert.same({}, syslog.structured_data_table:match("-"))
  end)
end)

describe("syslog RFC 3164 lines", function()
  local rfc3164 = syslog.rfc3164("Asia/Shanghai", MAY_20_2026)

  it("reads W3's line", function()
    assert.same({ pri = 44, syslogfacility = 5, syslogseverity = 4, timestamp = 1779186617e9,
                  hostname = "snack", syslogtag = "jls:", programname = "jls", msg = "foo bar 32" },
                rfc3164:match("<44>May 19 18:30:17 snack jls: foo bar 32"))
  end)

  it("reads logger --rfc3164 output and lines without PRI", function()
    local t = rfc3164:match("<13>May  9 08:01:02 snack alice: hello world")
    assert.equal("alice", t.programname)
    assert.equal("hello world", t.msg)
    assert.equal(13, t.pri)
    t = syslog.rfc3164("UTC", MAY_20_2026):match(
      "May 19 10:30:17 snack kernel: [    0.000000] Linux version 6.1.0")
    assert.equal(1779186617e9, t.timestamp)
    assert.equal("[    0.000000] Linux version 6.1.0", t.msg)
    assert.is_nil(t.pri)
  end)
end)

describe("syslog RFC 5424 lines", function()
  local rfc5424 = syslog.rfc5424("UTC")

  it("reads RFC 5424's own example", function()
    local t = rfc5424:match('<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 '
      .. '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] '
      .. '\239\187\191An application event log entry...')
    assert.same({ pri = 165, syslogfacility = 20, syslogseverity = 5, ["protocol-version"] = 1,
                  timestamp = 1065910455003e6, hostname = "mymachine.example.com",
                  ["app-name"] = "evntslog", msgid = "ID47",
                  ["structured-data"] = '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"]',
                  msg = "An application event log entry..." }, t)
  end)

  it("reads logger --rfc5424 output", function()
    local t = rfc5424:match('<13>1 2026-05-19T18:30:17.512345+08:00 snack alice 4242 - '
      .. '[timeQuality tzKnown="1" isSynced="1" syncAccuracy="500000"] hello')
    assert.equal("alice", t["app-name"])
    assert.equal("4242", t.procid)
    assert.is_nil(t.msgid)
    assert.equal("hello", t.msg)
    assert.equal(1779186617512345e3, t.timestamp)
  end)

  it("leaves out NILVALUE fields and a missing MSG", function()
    assert.same({ pri = 13, syslogfacility = 1, syslogseverity = 5, ["protocol-version"] = 1 },
                rfc5424:match("<13>1 - - - - - -"))
  end)
end)

describe("syslog.receiver", function()
  local function values(format, strict, record)
    return { lpeg.match(syslog.receiver(format, strict), record) }
  end

  it("captures RFC 3164 texts in its layout", function()
    assert.same({ "44", false, "May 19 18:30:17", nil, "snack", "jls:", "foo bar 32" },
                values("auto", false, "<44>May 19 18:30:17 snack jls: foo bar 32"))
    assert.same({ "13", false, nil, "2026-05-19T10:30:17Z", "snack", "sshd[7]:", "hi" },
                values("auto", false, "<13>2026-05-19T10:30:17Z snack sshd[7]: hi"))
    assert.same({ nil, false, nil, nil, nil, nil, "[x] no header" },
                values("auto", false, "[x] no header"))
    assert.same({ false, false, nil, nil, nil, nil, "<999>x" }, values("auto", false, "<999>x"))
  end)

  it("captures RFC 5424 texts in its layout", function()
    assert.same({ "165", true, "2003-10-11T22:14:15.003Z", "mymachine.example.com", "evntslog",
                  nil, "ID47", '[exampleSDID@32473 iut="3"]', "entry" },
                values("auto", false, '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com '
                                      .. 'evntslog - ID47 [exampleSDID@32473 iut="3"] \239\187\191entry'))
    assert.same({ "13", true, nil, nil, nil, nil, nil, nil, "no timestamp here" },
                values("auto", false, "<13>1 no timestamp here"))
  end)

  it("matches only valid records when strict, and says why the others fail", function()
    assert.same({}, values("auto", true, "<13>hello"))
    assert.equal('not RFC 3164: expected TIMESTAMP ("Mmm dd hh:mm:ss") at byte 5',
                 syslog.rejection("auto", "<13>hello"))
    assert.equal("not RFC 5424: expected SP at byte 31",
                 syslog.rejection("rfc5424", "<13>1 2003-10-11T22:14:15.003Z"))
    assert.has_error(function() syslog.receiver("rfc3339") end,
                     "syslog: unknown format 'rfc3339' (auto, rfc3164 or rfc5424)")
  end)

  it("reads PRI texts with leading zeros, as rsyslog does", function()
    assert.equal(13, syslog.pri_of_text["013"])
    assert.equal(0, syslog.severity_of_pri_text["000"])
  end)

  it("has every PRI's texts and nothing else in its lookup tables", function()
    for pri = 0, 191 do
      for _, text in ipairs({ tostring(pri), string.format("%02d", pri), string.format("%03d", pri) }) do
        assert.equal(pri, syslog.pri_of_text[text])
        assert.equal(math.floor(pri / 8), syslog.facility_of_pri_text[text])
        assert.equal(pri % 8, syslog.severity_of_pri_text[text])
      end
    end
    for _, text in ipairs({ "192", "0013", "", "+1", " 1", "1.0", "1e2", "x", 13, true }) do
      assert.is_nil(syslog.pri_of_text[text], tostring(text))
      assert.is_nil(syslog.facility_of_pri_text[text], tostring(text))
      assert.is_nil(syslog.severity_of_pri_text[text], tostring(text))
    end
  end)
end)

describe("syslog.sd_parameters", function()
  it("calls add for each parameter, in order, with values unescaped", function()
    local seen = {}
    local sd = syslog.sd_parameters(function(id, name, value) seen[#seen + 1] = { id, name, value } end)
    assert.is_true(lpeg.match(sd, '[a@1 x="1" y="say \\"hi\\""][b@2 x="\\]"]'))
    assert.same({ { "a@1", "x", "1" }, { "a@1", "y", 'say "hi"' }, { "b@2", "x", "]" } }, seen)
    assert.is_nil(lpeg.match(sd, '[a@1 x="1"] trailing'))
    assert.equal(3, #seen)
  end)
end)
