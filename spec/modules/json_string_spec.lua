dofile("spec/modules/spec_helper.lua")
local cjson = require "cjson"
local json_string = require "json_string"

local function round_trip(s) return cjson.decode(json_string.quote(s)) end

describe("json_string.escape", function()
  it("returns plain text as is", function()
    local s = "foo bar 32"
    assert.equal(s, json_string.escape(s))
    assert.equal("", json_string.escape(""))
    local long = string.rep("plain text ", 20)
    assert.equal(long, json_string.escape(long))
  end)

  it("escapes quotes, backslashes and control characters", function()
    assert.equal([[say \"hi\" \\ now]], json_string.escape([[say "hi" \ now]]))
    assert.equal([[a\nb\tc\r\b\f\u0000\u001f\u007f]], json_string.escape("a\nb\tc\r\b\f\0\31\127"))
    local long = string.rep("x", 60) .. '"'
    assert.equal(string.rep("x", 60) .. '\\"', json_string.escape(long))
  end)

  it("passes valid UTF-8 through", function()
    for _, s in ipairs({ "héllo", "日志采集", "emoji 😀", "\239\187\191bom" }) do
      assert.equal(s, json_string.escape(s))
      assert.equal(s, round_trip(s))
    end
  end)

  it("replaces bytes that are not UTF-8 with U+FFFD, one for each maximal subpart", function()
    local R = "\239\191\189" -- U+FFFD
    assert.equal("bad" .. R .. R .. "x", json_string.escape("bad\255\254x"))
    assert.equal(R .. "(", json_string.escape("\195("))                  -- a sequence cut short
    assert.equal(R .. "x", json_string.escape("\226\130x"))             -- two of three bytes
    assert.equal(R .. "x", json_string.escape("\240\159\152x"))        -- three of four
    assert.equal(R .. R .. R, json_string.escape("\237\160\128"))       -- a surrogate
    assert.equal(R .. R, json_string.escape("\192\175"))                 -- overlong
    assert.equal(R .. R .. R .. R, json_string.escape("\244\144\128\128")) -- above U+10FFFF
    assert.equal("ok é " .. R, json_string.escape("ok é \255"))
    assert.equal("bad" .. R .. "x", round_trip("bad\255x"))
  end)
end)

describe("json_string.number", function()
  it("writes integers without a fraction", function()
    assert.equal("44", json_string.number(44))
    assert.equal("-3", json_string.number(-3))
    assert.equal("0", json_string.number(-0.0))
    assert.equal("1779186617000000000", json_string.number(1779186617e9))
  end)

  it("writes other numbers so they read back exactly", function()
    assert.equal("1.5", json_string.number(1.5))
    assert.equal("0.1", json_string.number(0.1))
    assert.equal(1 / 3, tonumber(json_string.number(1 / 3)))
    assert.equal("1e+300", json_string.number(1e300))
  end)

  it("writes NaN and infinities as null", function()
    assert.equal("null", json_string.number(0 / 0))
    assert.equal("null", json_string.number(math.huge))
    assert.equal("null", json_string.number(-math.huge))
  end)
end)

describe("json_string.unescaped", function()
  it("reads an escaped body up to its closing quote", function()
    assert.equal('a"b\\c/\n', json_string.unescaped:match([[a\"b\\c\/\n" rest]]))
    assert.equal("é中😀", json_string.unescaped:match([[\u00e9\u4e2d\ud83d\ude00"]]))
    assert.equal("\239\191\189", json_string.unescaped:match([[\udc00"]]))
  end)
end)
