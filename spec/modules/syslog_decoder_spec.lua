dofile("spec/modules/spec_helper.lua")
local host = require "sandbox_host"
local recent = require "recent"

local BOM = "\239\187\191"

local function decoder(config)
  return host.decoder("sandbox/decoders/syslog.lua", config)
end

local function load_error(config)
  return host.load_error(decoder, config)
end

local decode = host.one

describe("syslog decoder: RFC 5424", function()
  local plugin = decoder()

  it("reads RFC 5424's examples (section 6.5)", function()
    assert.same({
      Type = "syslog", Timestamp = 1065910455003e6, Hostname = "mymachine.example.com",
      Severity = 2, Payload = "'su root' failed for lonvick on /dev/pts/8",
      Fields = { pri = 34, syslogfacility = 4, ["app-name"] = "su", programname = "su",
                 syslogtag = "su", msgid = "ID47" },
    }, decode(plugin, "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - "
                      .. BOM .. "'su root' failed for lonvick on /dev/pts/8"))

    assert.same({
      Type = "syslog", Timestamp = 1061727255000003e3, Hostname = "192.0.2.1", Severity = 5,
      Pid = 8710, Payload = "%% It's time to make the do-nuts.",
      Fields = { pri = 165, syslogfacility = 20, ["app-name"] = "myproc", programname = "myproc",
                 syslogtag = "myproc[8710]" },
    }, decode(plugin, "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - "
                      .. "%% It's time to make the do-nuts."))

    local sd = '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"]'
    local m = decode(plugin, "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 "
                             .. sd .. " " .. BOM .. "An application event log entry...")
    assert.equal("An application event log entry...", m.Payload)
    assert.same({ pri = 165, syslogfacility = 20, ["app-name"] = "evntslog", programname = "evntslog",
                  syslogtag = "evntslog", msgid = "ID47", ["structured-data"] = sd,
                  ["exampleSDID@32473.iut"] = "3", ["exampleSDID@32473.eventSource"] = "Application",
                  ["exampleSDID@32473.eventID"] = "1011" }, m.Fields)

    m = decode(plugin, "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 "
                       .. sd .. '[examplePriority@32473 class="high"]')
    assert.is_nil(m.Payload)  -- an empty string header is one never set (src/message.h)
    assert.equal("high", m.Fields["examplePriority@32473.class"])
    assert.equal("3", m.Fields["exampleSDID@32473.iut"])
  end)

  it("reads what logger --rfc5424 sends, with and without time quality", function()
    local m = decode(plugin, '<131>1 2026-11-23T12:46:17.493800+00:00 vm myapp - - '
                             .. '[timeQuality tzKnown="1" isSynced="0"] hello 5424')
    assert.same({ Type = "syslog", Timestamp = 1795437977493800e3, Hostname = "vm", Severity = 3,
                  Payload = "hello 5424",
                  Fields = { pri = 131, syslogfacility = 16, ["app-name"] = "myapp",
                             programname = "myapp", syslogtag = "myapp",
                             ["structured-data"] = '[timeQuality tzKnown="1" isSynced="0"]',
                             ["timeQuality.tzKnown"] = "1", ["timeQuality.isSynced"] = "0" } }, m)
    m = decode(plugin, '<13>1 2026-11-23T12:46:17.500485+00:00 vm myapp 13053 ID47 '
                       .. '[timeQuality tzKnown="1" isSynced="0"][zoo@123 tiger="hungry"] with sd')
    assert.equal(13053, m.Pid)
    assert.equal("hungry", m.Fields["zoo@123.tiger"])
    assert.equal("ID47", m.Fields.msgid)
    assert.equal("myapp[13053]", m.Fields.syslogtag)
    m = decode(plugin, "<13>1 2026-11-23T12:46:17.496708+00:00 vm myapp - - - notq")
    assert.equal("notq", m.Payload)
    assert.is_nil(m.Fields["structured-data"])
  end)

  it("unescapes SD values and makes a repeated name an array", function()
    local m = decode(plugin, '<13>1 - host app - - [x@1 q="say \\"hi\\" \\\\ [ok\\]" path="C:\\d"]'
                             .. '[multi@1 tag="a" tag="b" tag="c"] text')
    assert.equal('say "hi" \\ [ok]', m.Fields["x@1.q"])
    assert.equal("C:\\d", m.Fields["x@1.path"])   -- a backslash before another character stays
    assert.same({ "a", "b", "c" }, m.Fields["multi@1.tag"])
    assert.equal("text", m.Payload)
  end)

  it("keeps no SD field of one record in the next", function()
    decode(plugin, '<13>1 - host app - - [a@1 k="v"] one')
    local m = decode(plugin, '<13>1 - host app - - [b@1 k="w"] two')
    assert.is_nil(m.Fields["a@1.k"])
    assert.equal("w", m.Fields["b@1.k"])
    m = decode(plugin, "<13>May 19 18:30:17 snack jls: three")
    assert.is_nil(m.Fields["b@1.k"])
    assert.is_nil(m.Fields["structured-data"])
  end)

  it("leaves Timestamp to lumberjit when the record has none", function()
    local m = decode(plugin, "<13>1 - - - - - - msg")
    assert.same({ Type = "syslog", Severity = 5, Payload = "msg",
                  Fields = { pri = 13, syslogfacility = 1 } }, plugin:unstamped(m))
  end)

  it("drops only a BOM that starts the MSG", function()
    assert.equal("a" .. BOM, decode(plugin, "<13>1 - h a - - - " .. BOM .. "a" .. BOM).Payload)
  end)
end)

describe("syslog decoder: RFC 3164", function()
  it("reads what logger --rfc3164 sends over the network and to /dev/log", function()
    local plugin = decoder()
    assert.same({ Type = "syslog", Timestamp = recent.ns(11, 23, 12, 46, 17), Hostname = "vm", Severity = 5,
                  Pid = 13054, Payload = "hello 3164",
                  Fields = { pri = 13, syslogfacility = 1, syslogtag = "myapp[13054]:",
                             programname = "myapp" } },
                decode(plugin, "<13>Nov 23 12:46:17 vm myapp[13054]: hello 3164"))
    -- glibc's syslog(3) and logger to a local socket write no hostname.
    local m = decode(plugin, "<13>Nov 23 12:46:28 myapp[13535]: local default")
    assert.is_nil(m.Hostname)
    assert.equal("myapp", m.Fields.programname)
    assert.equal(13535, m.Pid)
    assert.equal("local default", m.Payload)
  end)

  it("reads timestamps in the zone of tz", function()
    local m = decode(decoder({ tz = "Asia/Shanghai" }), "<44>May 19 18:30:17 snack jls: foo bar 32")
    assert.equal(recent.ns(5, 19, 18, 30, 17, 8 * 3600), m.Timestamp)
    m = decode(decoder({ tz = "+02:00" }), "<44>May 19 12:30:17 snack jls: x")
    assert.equal(recent.ns(5, 19, 12, 30, 17, 2 * 3600), m.Timestamp)
  end)

  it("infers the year across New Year", function()
    -- The sandbox's clock is the real one, so the times are taken around
    -- the moment the spec runs: an hour ago and 20 days ahead are those
    -- very times (an hour ago on New Year's Day is last year's; 20 days
    -- ahead in late December is next year's), 40 days ahead is last year's.
    -- In the zone of tz: in Shanghai the year turns at 16:00 UTC.
    -- (date_spec.lua's year inference cases run the rule at fixed dates.)
    for _, zone in ipairs({ { "UTC", 0 }, { "Asia/Shanghai", 8 * 3600 } }) do
      local plugin, now = decoder({ tz = zone[1] }), os.time()
      for _, case in ipairs({ { -3600, 0 }, { 20 * 86400, 0 }, { 40 * 86400, -1 } }) do
        local wall = now + case[1] + zone[2]
        if os.date("!%m-%d", wall) == "02-29" then wall = wall + 86400 end
        local t = os.date("!*t", wall)
        local text = os.date("!%b %e %H:%M:%S", wall)
        assert.equal(recent.wall_ns(t.year + case[2], t.month, t.day, t.hour, t.min, t.sec, zone[2]),
                     decode(plugin, "<13>" .. text .. " h t: x").Timestamp, zone[1] .. " " .. text)
      end
    end
  end)

  it("reads the timestamp variants rsyslog accepts", function()
    local plugin = decoder()
    -- May 1 12:00:00 UTC: in 2026 where the header says so, else in the
    -- year inferred today.
    local may_1, may_1_2026 = recent.ns(5, 1, 12, 0, 0), 1777636800e9
    for _, case in ipairs({ { "May  1 12:00:00", may_1 }, { "May 1 12:00:00", may_1 },
                            { "May 01 12:00:00", may_1 }, { "may  1 12:00:00", may_1 },
                            { "May  1 2026 12:00:00", may_1_2026 },
                            { "2026 May  1 12:00:00", may_1_2026 },
                            { "May  1 12:00:00:", may_1 }, { " May  1 12:00:00", may_1 },
                            { "2026-05-01T12:00:00Z", may_1_2026 },
                            { "2026-05-01T14:00:00+02:00", may_1_2026 } }) do
      local header = case[1]
      local m = decode(plugin, "<13>" .. header .. " host tag: msg")
      assert.equal(case[2], m.Timestamp, header)
      assert.equal("host", m.Hostname, header)
      assert.equal("msg", m.Payload, header)
    end
    assert.equal((may_1 / 1e9 + 0.123) * 1e9,
                 decode(plugin, "<13>May  1 12:00:00.123 host tag: msg").Timestamp)
  end)

  it("leaves header parts that do not parse in the msg, as rsyslog does", function()
    local plugin = decoder()
    -- No timestamp: the hostname and tag are still looked for.
    local m = decode(plugin, "<13>hello world foo")
    assert.same({ Type = "syslog", Severity = 5, Hostname = "hello", Payload = "foo",
                  Fields = { pri = 13, syslogfacility = 1, syslogtag = "world", programname = "world" } },
                plugin:unstamped(m))
    m = decode(plugin, "<13>hello")
    assert.equal("hello", m.Hostname)
    assert.is_nil(m.Payload)  -- an empty string header is one never set (src/message.h)
    m = decode(plugin, "<13>May 32 12:00:00 host tag: bad day")
    plugin:unstamped(m)
    assert.equal("May", m.Hostname)
    assert.equal("12:00:00 host tag: bad day", m.Payload)
    -- A word that is no hostname (it ends in "-", has "@" or brackets) is the tag.
    m = decode(plugin, "<13>May  1 12:00:00 host- tag: x")
    assert.is_nil(m.Hostname)
    assert.equal("host-", m.Fields.syslogtag)
    assert.equal("tag: x", m.Payload)
  end)

  it("gives a record without PRI user.notice", function()
    local m = decode(decoder(), "May 19 10:30:17 snack kernel: [    0.000000] Linux version 6.1.0")
    assert.equal(13, m.Fields.pri)
    assert.equal(5, m.Severity)
    assert.equal("[    0.000000] Linux version 6.1.0", m.Payload)
  end)

  it("takes a record whose '<' opens no valid PRI whole as the Payload", function()
    local plugin = decoder()
    for _, record in ipairs({ "<200>May  1 12:00:00 host tag: x", "<abc> x", "<0013>x", "<13" }) do
      assert.same({ Type = "syslog", Payload = record, Fields = {} },
                  plugin:unstamped(decode(plugin, record)))
    end
    assert.equal(13, decode(decoder(), "<013>May  1 12:00:00 host tag: x").Fields.pri)
  end)

  it("reads headerless records and syslogd's repeat notices without a tag", function()
    local plugin = decoder()
    assert.same({ Type = "syslog", Severity = 5, Payload = '  {"json": 1}',
                  Fields = { pri = 13, syslogfacility = 1 } },
                plugin:unstamped(decode(plugin, '<13>  {"json": 1}')))
    local m = decode(plugin, "<13>May  1 12:00:00 host last message repeated 5 times")
    assert.equal("last message repeated 5 times", m.Payload)
    assert.equal("host", m.Hostname)
    assert.is_nil(m.Fields.syslogtag)
    m = decode(plugin, "<13>last message repeated 2 times")
    assert.equal("last message repeated 2 times", m.Payload)
    assert.is_nil(m.Hostname)
  end)

  it("drops one trailing newline and one space before the msg", function()
    local plugin = decoder()
    assert.equal(" two", decode(plugin, "<13>May  1 12:00:00 host tag:  two\n").Payload)
    assert.equal("x\n", decode(plugin, "<13>May  1 12:00:00 host tag: x\n\n").Payload)
  end)

  it("reads 10 varied lines", function()
    local plugin = decoder({ tz = "Asia/Shanghai" })
    local cases = {
      { "<20>May 19 00:00:00 edge.example.org sshd[1041]: storage object batch mount trace user=u376 status=denied",
        "edge.example.org", "sshd", 1041, "storage object batch mount trace user=u376 status=denied" },
      { "<95>May 19 00:00:00 db-7 jls[1026]: success user send offset", "db-7", "jls", 1026,
        "success user send offset" },
      { "<38>May  9 08:01:02 snack sshd[1234]: Accepted publickey for alice from 192.0.2.7 port 51234 ssh2",
        "snack", "sshd", 1234, "Accepted publickey for alice from 192.0.2.7 port 51234 ssh2" },
      { "<78>May 19 10:30:01 snack CRON[4321]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)",
        "snack", "CRON", 4321, "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)" },
      { "<6>May 19 10:30:17 snack kernel: [  123.456789] usb 1-1: new high-speed USB device",
        "snack", "kernel", nil, "[  123.456789] usb 1-1: new high-speed USB device" },
      { "<22>May 19 10:30:17 mail postfix/smtpd[2231]: connect from unknown[192.0.2.9]",
        "mail", "postfix", 2231, "connect from unknown[192.0.2.9]" },
      { "<86>May 19 10:30:17 snack sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; COMMAND=/bin/true",
        "snack", "sudo", nil, "   alice : TTY=pts/0 ; PWD=/home/alice ; COMMAND=/bin/true" },
      { "<30>May 19 10:30:17 snack systemd[1]: Started Session 5 of user alice.",
        "snack", "systemd", 1, "Started Session 5 of user alice." },
      { "<189>May 19 10:30:17 192.0.2.1 %LINK-3-UPDOWN: Interface Gi0/1, changed state to up",
        "192.0.2.1", "%LINK-3-UPDOWN", nil, "Interface Gi0/1, changed state to up" },
      { "<13>1 2026-05-19T18:30:17.512345+08:00 snack alice 4242 - - hello",
        "snack", "alice", 4242, "hello" },
    }
    for _, case in ipairs(cases) do
      local m = decode(plugin, case[1])
      assert.equal(case[2], m.Hostname, case[1])
      assert.equal(case[3], m.Fields.programname, case[1])
      assert.equal(case[4], m.Pid, case[1])
      assert.equal(case[5], m.Payload, case[1])
      assert.is_number(m.Timestamp, case[1])
    end
  end)
end)

describe("syslog decoder: settings", function()
  it("takes Type from message_type", function()
    assert.equal("net", decode(decoder({ message_type = "net" }), "<13>x").Type)
  end)

  it("reads every record as RFC 3164 with format rfc3164", function()
    local m = decode(decoder({ format = "rfc3164" }), "<13>1 2026-05-19T10:30:17Z host app - - - x")
    assert.equal("1", m.Hostname)
    assert.is_nil(m.Fields["app-name"])
  end)

  it("reads only the PRI of records that are not RFC 5424 with format rfc5424", function()
    local plugin = decoder({ format = "rfc5424" })
    assert.same({ Type = "syslog", Severity = 5, Payload = "May 19 10:30:17 host tag: x",
                  Fields = { pri = 13, syslogfacility = 1 } },
                plugin:unstamped(decode(plugin, "<13>May 19 10:30:17 host tag: x")))
    assert.equal("app", decode(plugin, "<13>1 - host app - - - x").Fields["app-name"])
  end)

  it("fails to load with an unknown format or zone", function()
    assert.matches("syslog: unknown format 'rfc9999' (auto, rfc3164 or rfc5424)",
                   load_error({ format = "rfc9999" }), 1, true)
    assert.matches("Nowhere/City", load_error({ tz = "Nowhere/City" }), 1, true)
  end)
end)

describe("syslog decoder: strict", function()
  local plugin = decoder({ strict = true })

  local function rejection(record)
    local rc, err, messages = plugin:decode(record)
    assert.equal(-1, rc)
    assert.same({}, messages)
    return err
  end

  it("accepts valid RFC 3164 and RFC 5424", function()
    assert.equal("x", decode(plugin, "<13>May  1 12:00:00 host tag: x").Payload)
    assert.equal("An application event log entry...", decode(plugin,
      '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 '
      .. '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] '
      .. BOM .. "An application event log entry...").Payload)
    assert.is_nil(decode(plugin, "<13>1 - - - - - -").Payload)  -- empty: never set
  end)

  it("rejects RFC 3164 that is not, saying where", function()
    assert.equal("not RFC 3164: expected PRI (<0> to <191>) at byte 1", rejection("hello world"))
    assert.equal("not RFC 3164: expected PRI (<0> to <191>) at byte 1", rejection("<013>May  1 12:00:00 h t: x"))
    assert.equal('not RFC 3164: expected TIMESTAMP ("Mmm dd hh:mm:ss") at byte 5', rejection("<13>hello"))
    assert.equal('not RFC 3164: expected TIMESTAMP ("Mmm dd hh:mm:ss") at byte 5',
                 rejection("<13>May 1 12:00:00 host tag: x"))
    assert.equal("not RFC 3164: expected HOSTNAME (letters, digits, '.', '_', '-') at byte 21",
                 rejection("<13>May  1 12:00:00 sshd[1]: no hostname"))
  end)

  it("rejects RFC 5424 that is not, saying where", function()
    assert.equal("not RFC 5424: expected TIMESTAMP (RFC 3339 with an offset, or -) at byte 7",
                 rejection("<13>1 2003-10-11T22:14:15 host app - - - no offset"))
    assert.equal("not RFC 5424: expected MSGID (1 to 32 printable characters, or -) at byte 15",
                 rejection("<13>1 - h a p " .. string.rep("m", 33) .. " - x"))
    assert.equal('not RFC 5424: expected STRUCTURED-DATA ([SD-ID PARAM="VALUE" ...] or -) at byte 17',
                 rejection('<13>1 - h a - - [x@1 k="unescaped ] bracket"] x'))
    assert.equal('not RFC 5424: expected STRUCTURED-DATA ([SD-ID PARAM="VALUE" ...] or -) at byte 17',
                 rejection("<13>1 - h a - - hello"))
  end)
end)
