dofile("spec/modules/spec_helper.lua")
local lpeg = require "lpeg"
local date = require "date"
local tzif = require "date.tzif"
local posix_tz = require "date.posix_tz"

local utc = date.seconds_from_civil

-- A TZif file built in memory: version 1, the given transitions and types.
local function be32(v)
  if v < 0 then v = v + 4294967296 end
  local bytes = {}
  for i = 4, 1, -1 do
    bytes[i] = string.char(v % 256)
    v = math.floor(v / 256)
  end
  return table.concat(bytes)
end
local function tzif_v1(transitions, type_indexes, offsets)
  local parts = { "TZif", "\0", string.rep("\0", 15),
                  be32(0), be32(0), be32(0), be32(#transitions), be32(#offsets), be32(4) }
  for _, t in ipairs(transitions) do parts[#parts + 1] = be32(t) end
  for _, i in ipairs(type_indexes) do parts[#parts + 1] = string.char(i) end
  for _, offset in ipairs(offsets) do parts[#parts + 1] = be32(offset) .. "\0\0" end
  parts[#parts + 1] = "XYZ\0"
  return table.concat(parts)
end

describe("date.civil arithmetic", function()
  it("counts days from 1970-01-01 without os.time", function()
    assert.equal(0, date.days_from_civil(1970, 1, 1))
    assert.equal(-1, date.days_from_civil(1969, 12, 31))
    assert.equal(11016, date.days_from_civil(2000, 2, 29))
    assert.equal(1779186617, utc(2026, 5, 19, 10, 30, 17))
  end)

  it("inverts days_from_civil across leap years and centuries", function()
    for _, ymd in ipairs({ { 1900, 3, 1 }, { 2000, 2, 29 }, { 2024, 12, 31 }, { 2100, 2, 28 },
                            { 1969, 12, 31 }, { 1601, 1, 1 } }) do
      local y, m, d = date.civil_from_days(date.days_from_civil(ymd[1], ymd[2], ymd[3]))
      assert.same(ymd, { y, m, d })
    end
  end)

  it("knows weekdays and month lengths", function()
    assert.equal(4, date.weekday(0))                                   -- Thursday
    assert.equal(0, date.weekday(date.days_from_civil(2026, 3, 29)))   -- a Sunday
    assert.equal(29, date.days_in_month(2024, 2))
    assert.equal(28, date.days_in_month(2100, 2))
  end)
end)

describe("date zones", function()
  it("reads fixed offsets and UTC without zone files", function()
    assert.equal(0, date.zone("UTC"):offset_at(0))
    assert.equal(28800, date.zone("+08:00"):offset_at(0))
    assert.equal(-19800, date.zone("-0530"):offset_at(0))
    assert.equal(3600, date.zone("+01"):offset_at(0))
  end)

  it("converts Asia/Shanghai (+08:00, no DST today, DST in 1988)", function()
    local shanghai = assert(date.zone("Asia/Shanghai"))
    assert.equal(28800, shanghai:offset_at(utc(2026, 5, 19, 10, 30, 17)))
    assert.equal(utc(2026, 5, 19, 10, 30, 17), shanghai:utc_from_local(utc(2026, 5, 19, 18, 30, 17)))
    assert.equal(32400, shanghai:offset_at(utc(1988, 7, 1, 3)))
  end)

  it("follows Europe/Berlin's DST transitions to the second", function()
    local berlin = assert(date.zone("Europe/Berlin"))
    local spring, autumn = utc(2026, 3, 29, 1, 0, 0), utc(2026, 10, 25, 1, 0, 0)
    assert.equal(3600, berlin:offset_at(spring - 1))
    assert.equal(7200, berlin:offset_at(spring))
    assert.equal(7200, berlin:offset_at(autumn - 1))
    assert.equal(3600, berlin:offset_at(autumn))
    assert.equal(10800, berlin:offset_at(utc(1945, 6, 1, 9)))      -- double summer time
  end)

  it("converts Berlin wall-clock times, gaps and folds as fold=0", function()
    local berlin = assert(date.zone("Europe/Berlin"))
    assert.equal(utc(2026, 7, 1, 10), berlin:utc_from_local(utc(2026, 7, 1, 12)))
    assert.equal(utc(2026, 1, 15, 11), berlin:utc_from_local(utc(2026, 1, 15, 12)))
    -- 02:30 on Mar 29 never happens: read with the offset before (CET).
    assert.equal(utc(2026, 3, 29, 1, 30), berlin:utc_from_local(utc(2026, 3, 29, 2, 30)))
    -- 02:30 on Oct 25 happens twice: the first (CEST) wins.
    assert.equal(utc(2026, 10, 25, 0, 30), berlin:utc_from_local(utc(2026, 10, 25, 2, 30)))
  end)

  it("uses the footer rule past the transition table", function()
    local berlin = assert(date.zone("Europe/Berlin"))
    assert.equal(7200, berlin:offset_at(utc(2100, 7, 1, 10)))
    assert.equal(3600, berlin:offset_at(utc(2100, 1, 1, 11)))
    assert.equal(4118119200, berlin:utc_from_local(utc(2100, 7, 1, 12)))
  end)

  it("caches zones per name and names unknown ones in the error", function()
    assert.equal(date.zone("Asia/Shanghai"), date.zone("Asia/Shanghai"))
    local zone, err = date.zone("Mars/Olympus_Mons")
    assert.is_nil(zone)
    assert.matches("Mars/Olympus_Mons", err)
    assert.is_nil((date.zone("../../etc/passwd")))
  end)

  it("prefers read_zoneinfo when the sandbox provides it", function()
    local asked
    _G.read_zoneinfo = function(name)
      asked = name
      return tzif_v1({ 0 }, { 1 }, { 3600, 7200 })
    end
    local zone = date.zone("Test/Reader")
    _G.read_zoneinfo = nil
    assert.equal("Test/Reader", asked)
    assert.equal(7200, zone:offset_at(10))
  end)
end)

describe("date.tzif", function()
  it("parses version 1 files", function()
    local zone = assert(tzif.parse(tzif_v1({ -100, 1000 }, { 1, 0 }, { 0, 3600 })))
    assert.same({ -100, 1000 }, zone.transitions)
    assert.same({ 3600, 0 }, zone.offsets)
    assert.equal(0, zone.initial_offset)
    assert.is_nil(zone.footer)
    local z = assert(date.zone_from_tzif(tzif_v1({ -100, 1000 }, { 1, 0 }, { 0, 3600 })))
    assert.equal(0, z:offset_at(-200))
    assert.equal(3600, z:offset_at(-100))
    assert.equal(0, z:offset_at(5000))
  end)

  it("parses version 2+ files with their footer", function()
    local file = io.open("/usr/share/zoneinfo/Europe/Berlin", "rb")
    local zone = assert(tzif.parse(file:read("*a")))
    file:close()
    assert.equal("CET-1CEST,M3.5.0,M10.5.0/3", zone.footer)
    assert.is_true(#zone.transitions > 100)
  end)

  it("rejects what is not TZif", function()
    assert.same({ nil, "not a TZif file" }, { tzif.parse("hello, world, this is not a zone file at all....") })
    assert.same({ nil, "truncated TZif data" }, { tzif.parse(tzif_v1({ 0 }, { 0 }, { 0 }):sub(1, 50)) })
  end)
end)

describe("date.posix_tz", function()
  it("reads rules with names, offsets and transition times", function()
    local rule = assert(posix_tz.parse("CET-1CEST,M3.5.0,M10.5.0/3"))
    assert.equal(3600, rule.std_offset)
    assert.equal(7200, rule.dst_offset)
    assert.equal(10800, rule.finish_time)
    assert.equal(-10800, posix_tz.parse("<-03>3").std_offset)
    assert.is_nil(posix_tz.parse("CST-8").dst_offset)
    assert.is_nil(posix_tz.parse("not a rule"))
  end)

  it("evaluates southern-hemisphere and Julian-day rules", function()
    local sydney = assert(posix_tz.parse("AEST-10AEDT,M10.1.0,M4.1.0/3"))
    assert.equal(39600, posix_tz.offset_at(sydney, utc(2030, 1, 15)))
    assert.equal(36000, posix_tz.offset_at(sydney, utc(2030, 7, 15)))
    local julian = assert(posix_tz.parse("XST-1XDT,J60,J300"))      -- Mar 1 .. Oct 27
    assert.equal(3600, posix_tz.offset_at(julian, utc(2028, 2, 29, 12)))
    assert.equal(7200, posix_tz.offset_at(julian, utc(2028, 3, 1, 12)))
  end)
end)

describe("date grammars", function()
  it("reads RFC 3164 timestamps, space- or zero-padded", function()
    assert.same({ 5, 19, 18, 30, 17, 0 }, { date.rfc3164:match("May 19 18:30:17") })
    assert.same({ 5, 9, 8, 1, 2, 0 }, { date.rfc3164:match("May  9 08:01:02") })
    assert.same({ 12, 9, 8, 1, 2, 0 }, { date.rfc3164:match("dec 09 08:01:02") })
    assert.same({ 1, 1, 0, 0, 0, 0.25 }, { date.rfc3164:match("Jan  1 00:00:00.25") })
    assert.is_nil(date.rfc3164:match("Foo 19 18:30:17"))
    assert.is_nil(date.rfc3164_text:match("May 19 18:30"))
  end)

  it("does not match RFC 3164 times out of range, which rfc3164_to_ns could not convert", function()
    for _, text in ipairs({ "May 19 24:00:00", "May 19 12:60:00", "May 19 12:00:61" }) do
      assert.is_nil(date.rfc3164_text:match(text), text)
      assert.is_nil(date.rfc3164:match(text), text)
    end
    assert.same({ 5, 19, 23, 59, 60, 0 }, { date.rfc3164:match("May 19 23:59:60") })
  end)

  it("reads RFC 3339 and ISO 8601 timestamps", function()
    assert.same({ 2026, 5, 19, 18, 30, 17, 0.123456, 28800 },
                { date.rfc3339:match("2026-05-19T18:30:17.123456+08:00") })
    assert.same({ 2026, 5, 19, 10, 30, 17, 0, 0 }, { date.rfc3339:match("2026-05-19T10:30:17Z") })
    assert.is_nil(date.rfc3339:match("2026-05-19 10:30:17"))
    assert.same({ 2026, 5, 19, 10, 30, 17, 0, false }, { date.iso8601:match("2026-05-19 10:30:17") })
    assert.same({ 2026, 5, 19, 10, 30, 17, 0, -18000 }, { date.iso8601:match("2026-05-19T10:30:17-0500") })
  end)

  it("captures ns for offsets, and for the zone when there is none", function()
    local ns = lpeg.match(date.iso8601_ns("Asia/Shanghai"), "2026-05-19T18:30:17.250+08:00")
    assert.equal("2026-05-19T10:30:17.250Z", date.iso8601_utc_ms(ns))
    ns = lpeg.match(date.iso8601_ns("Asia/Shanghai"), "2026-05-19T18:30:17")
    assert.equal("2026-05-19T10:30:17.000Z", date.iso8601_utc_ms(ns))
    ns = lpeg.match(date.iso8601_ns("Asia/Shanghai"), "2026-05-19t10:30:17z")
    assert.equal(1779186617e9, ns)
  end)

  it("reads RFC 3164 timestamps as rsyslog receives them", function()
    assert.same({ false, 5, 9, false, 8, 1, 2, 0 }, { date.rfc3164_received:match("May  9 08:01:02") })
    assert.same({ false, 5, 19, false, 8, 1, 2, 0 }, { date.rfc3164_received:match("May  19 08:01:02") })
    assert.same({ 2026, 5, 19, false, 8, 1, 2, 0.5 },
                { date.rfc3164_received:match("2026 May 19 08:01:02.5") })      -- Brocade
    assert.same({ false, 5, 19, 2026, 8, 1, 2, 0 },
                { date.rfc3164_received:match("May 19 2026 08:01:02") })        -- Cisco
    assert.is_nil(date.rfc3164_received:match("May 32 08:01:02"))
    assert.is_nil(date.rfc3164_received:match("May 19 24:01:02"))
    assert.is_nil(date.rfc3164_received_text:match("May 19 08:61:02"))
    local to_ns = date.rfc3164_to_ns("UTC", function() return 1779235200 end)
    assert.equal(1779186617e9, to_ns["May 19 2026 10:30:17"])
    assert.equal(1747650617e9, to_ns["2025 May 19 10:30:17"])
  end)

  it("reads RFC 3339 only with its offset", function()
    assert.truthy(date.rfc3339_text:match("2026-05-19T18:30:17.123456+08:00"))
    assert.truthy(date.rfc3339_text:match("2026-05-19T10:30:17Z"))
    assert.is_nil(date.rfc3339_text:match("2026-05-19T10:30:17 x"))
  end)

  it("reads rsyslog's mysql, pgsql and unix formats", function()
    assert.equal(1779186617e9, lpeg.match(date.mysql_ns("+08:00"), "20260519183017"))
    assert.equal(1779186617e9, lpeg.match(date.pgsql_ns("UTC"), "2026-05-19 10:30:17"))
    assert.equal(1779186617e9, lpeg.match(date.unix_ns, "1779186617"))
  end)
end)

describe("RFC 3164 year inference", function()
  local shanghai = date.zone("Asia/Shanghai")
  local function at(...)
    local now = shanghai:utc_from_local(utc(...))
    return function() return now end
  end
  local function year_of(text, now)
    local ns = lpeg.match(date.rfc3164_ns(shanghai, now), text)
    return (date.civil_from_days(math.floor((ns / 1e9 + 28800) / 86400)))
  end

  it("takes the current year for recent and slightly future times", function()
    assert.equal(2026, year_of("May 19 18:30:17", at(2026, 5, 20)))
    assert.equal(2026, year_of("Jun 10 00:00:00", at(2026, 5, 20)))        -- 3 weeks ahead
    assert.equal(2026, year_of("Jan  2 00:00:00", at(2026, 12, 1)))
  end)

  it("puts times more than a month ahead in the previous year", function()
    assert.equal(2025, year_of("Jul 19 18:30:17", at(2026, 5, 20)))
    assert.equal(2026, year_of("Dec 31 23:59:59", at(2027, 1, 2)))
  end)

  it("puts early January seen on Dec 31 in the next year", function()
    assert.equal(2027, year_of("Jan  1 00:00:10", at(2026, 12, 31, 23, 59, 0)))
  end)

  -- A year later, and after the clock was stepped back four years.
  for _, years in ipairs({ { 2026, 2027 }, { 2030, 2026 } }) do
    local first, later = years[1], years[2]
    it("reconsiders a text's year at the first new text once the clock went from " .. first .. " to "
        .. later, function()
      local now = utc(first, 5, 20)
      local to_ns = date.rfc3164_to_ns("UTC", function() return now end)
      assert.equal(utc(first, 5, 19, 10, 30, 17) * 1e9, to_ns["May 19 10:30:17"])
      now = utc(later, 5, 20)
      assert.equal(utc(later, 5, 20) * 1e9, to_ns["May 20 00:00:00"])       -- a new text
      assert.equal(utc(later, 5, 19, 10, 30, 17) * 1e9, to_ns["May 19 10:30:17"])
    end)
  end

  it("converts W3's timestamp from Shanghai time", function()
    local ns = lpeg.match(date.rfc3164_ns("Asia/Shanghai", at(2026, 5, 20)), "May 19 18:30:17")
    assert.equal(1779186617e9, ns)
  end)
end)

describe("date.iso8601_utc_ms", function()
  it("formats ns as ISO 8601 UTC with milliseconds", function()
    assert.equal("2026-05-19T10:30:17.000Z", date.iso8601_utc_ms(1779186617e9))
    assert.equal("2026-05-19T10:30:17.123Z", date.iso8601_utc_ms(1779186617123e6))
    assert.equal("1970-01-01T00:00:00.000Z", date.iso8601_utc_ms(0))
    assert.equal("1969-12-31T23:59:59.999Z", date.iso8601_utc_ms(-1e6))
    assert.equal("2000-02-29T23:59:59.999Z", date.iso8601_utc_ms(utc(2000, 2, 29, 23, 59, 59) * 1e9 + 999e6))
  end)

  it("gives the same text for repeated and interleaved calls", function()
    local a, b = 1779186617e9, 1779186618500e6
    assert.equal("2026-05-19T10:30:17.000Z", date.iso8601_utc_ms(a))
    assert.equal("2026-05-19T10:30:18.500Z", date.iso8601_utc_ms(b))
    assert.equal("2026-05-19T10:30:17.000Z", date.iso8601_utc_ms(a))
  end)
end)
