dofile("spec/modules/spec_helper.lua")
local strptime = require "date.strptime"

local MAY_19 = 1779186617e9 -- 2026-05-19T10:30:17Z

-- ns and the position after the time, or nil and where parsing stopped.
local function parse(fmt, text, options)
  return strptime.compile(fmt, options)(text, 1)
end

describe("date.strptime", function()
  it("reads nginx's $time_local with its offset", function()
    assert.same({ MAY_19, 27 }, { parse("nginx", "19/May/2026:18:30:17 +0800") })
    assert.same({ MAY_19, 27 }, { parse("%d/%b/%Y:%H:%M:%S %z", "19/may/2026:05:00:17 -0530") })
    assert.equal(MAY_19, parse("%d/%b/%Y:%T %z", "19/MAY/2026:10:30:17 +0000"))
  end)

  it("reads ISO 8601 and RFC 3339: fractions, Z, offsets with and without a colon", function()
    assert.equal(MAY_19, parse("iso8601", "2026-05-19T18:30:17+08:00"))
    assert.equal(MAY_19 + 5e8, parse("rfc3339", "2026-05-19T10:30:17.5Z"))
    assert.equal(MAY_19 + 123456789, parse("iso8601", "2026-05-19T18:30:17,123456789+0800"))
    -- Digits past the nanosecond are read and dropped.
    assert.same({ MAY_19 + 123456789, 32 }, { parse("iso8601", "2026-05-19T10:30:17.1234567891z") })
    assert.equal(MAY_19 - 3600e9, parse("rfc3339", "2026-05-19T10:30:17+01"))
  end)

  it("reads times without an offset in the zone tz", function()
    assert.equal(MAY_19, parse("iso8601", "2026-05-19T18:30:17", { tz = "Asia/Shanghai" }))
    assert.equal(MAY_19, parse("%F %T", "2026-05-19 12:30:17", { tz = "Europe/Berlin" }))
    assert.equal(MAY_19, parse("%F %T", "2026-05-19 10:30:17"))
    assert.has_error(function() strptime.compile("%F", { tz = "Mars/Olympus" }) end)
  end)

  it("reads epoch seconds with fractions ($msec) and epoch milliseconds", function()
    assert.same({ MAY_19 + 123e6, 15 }, { parse("epoch", "1779186617.123") })
    assert.equal(1779186617123000064, parse("%s", "1779186617.123"))
    assert.equal(MAY_19, parse("%s", "1779186617"))
    assert.equal(MAY_19 + 123e6, parse("epoch_ms", "1779186617123"))
  end)

  it("reads %e, %a and literal text", function()
    assert.equal(MAY_19 - 10 * 86400e9, parse("%a, %e %b %Y %T GMT", "Sat,  9 May 2026 10:30:17 GMT"))
    assert.equal(MAY_19 - 10 * 86400e9, parse("%a %e %b %Y %T", "sat 9 May 2026 10:30:17"))
    assert.equal(MAY_19, parse("%%%Y%m%d%H%M%S", "%20260519103017"))
  end)

  it("stops where the text does not fit, and checks ranges and month lengths", function()
    assert.same({ nil, 4 }, { parse("nginx", "19/Mai/2026:18:30:17 +0800") })
    assert.same({ nil, 22 }, { parse("nginx", "19/May/2026:18:30:17 0800") })
    assert.same({ nil, 13 }, { parse("nginx", "19/May/2026:24:30:17 +0800") })
    assert.same({ nil, 1 }, { parse("%F", "2026-02-29") })
    assert.equal(1835395200e9, parse("%F", "2028-02-29"))
    assert.same({ nil, 6 }, { parse("%F", "2026-13-01") })
    assert.same({ nil, 1 }, { parse("%s", "x") })
  end)

  it("reads from a position and says where the time ended", function()
    local reader = strptime.compile("nginx")
    assert.same({ MAY_19, 28 }, { reader("[19/May/2026:18:30:17 +0800]", 2) })
  end)

  it("refuses unsupported directives and epoch mixed with calendar fields", function()
    assert.has_error(function() strptime.compile("%Y %j") end,
                     'strptime: unsupported directive %j at position 4 in "%Y %j"')
    assert.has_error(function() strptime.compile("%s %Y") end,
                     'strptime: %s or %Q cannot be mixed with calendar fields in "%s %Y"')
    assert.has_error(function() strptime.compile("") end, "strptime: expected a format string")
  end)
end)
