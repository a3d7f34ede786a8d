-- The JSON encoder's C writer (src/runtime/json_message.c, the sandbox's
-- inject_message_json) against its Lua reference
-- (spec/modules/json_reference.lua): the same decoder runs in the binary
-- and in the sandbox host (spec/modules/sandbox_host.lua) on the same lines,
-- where an encoder made of the reference writes each message, and every line
-- the binary writes must be the reference's text, byte for byte. The messages carry
-- what JSON makes hard: escapes, control bytes, DEL, invalid and valid
-- UTF-8, reserved field names, arrays, fractions, huge and negative
-- numbers, booleans, absent headers; and long strings with a byte to
-- escape at each place.
package.path = "./lua_modules/?.lua;./spec/modules/?.lua;" .. package.path
local run = dofile("spec/e2e/run.lua")
local host = require "sandbox_host"

local decoder = [[
local n = 0
function process_message(line)
  n = n + 1
  local odd = n % 2 == 1
  inject_message({
    Timestamp = 1779186617000000000 + n * 1234567 + (n % 3) * 499,
    Payload = line,
    Hostname = odd and "host\t\"quoted\"" or nil,
    Type = "kind-" .. n % 3,
    Logger = n % 3 == 0 and "log\\ger" or nil,
    Severity = n % 8,
    Pid = odd and n * 977 or nil,
    Fields = {
      message = "a field named like a header",
      ["name \"with\" quotes\1"] = "del\127 bell\7 nul\0 end",
      third = n / 3,
      big = 2^60 + n * 1024,
      negative = -n * 1.5,
      tiny = 1e-300 * n,
      flag = odd,
      words = { "one", line, "b\200d" },
      numbers = { 1, 2.5, -0.125, 1e21, 0, 7, 99, 999, 1000, 999.5, 0.5, n % 1000 },
      line = line,
    },
  })
end
]]

local lines = {
  "plain ascii",
  "tabs\tand\rreturns\band\fform feeds",
  "utf-8: caf\195\169 \226\130\172 \240\159\152\128",
  "invalid: \255\254 \192\128 \237\160\128 \244\144\128\128 cut \226\130",
  "quotes \" and backslashes \\ and slash /",
  "control \1\2\3\31 and DEL \127",
  "",
}
-- The writer copies long strings 16 bytes at a time, the last 16 as those
-- that end the string: plain strings of 15 to 49 bytes, and each with one
-- byte to escape at every place in it.
local specials = { '"', "\\", "\1", "\31", "\127", "\200", "\t" }
for len = 15, 49 do
  lines[#lines + 1] = ("p"):rep(len)
  for at = 1, len do
    local special = specials[(len + at) % #specials + 1]
    lines[#lines + 1] = ("a"):rep(at - 1) .. special .. ("b"):rep(len - at)
  end
end

describe("the JSON encoder's C writer", function()
  it("writes what the Lua reference writes, byte for byte", function()
    local input = table.concat(lines, "\n") .. "\n"
    local r = run.lumberjit{
      config = [[
lumberjit = { dead_letter_path = "dead.log" }
input = { type = "stdin_input", decoder = "d" }
d = { type = "decoder", filename = "d.lua" }
json = { type = "encoder", filename = "encoders/json.lua" }
out = { type = "stdout_output", encoder = "json", message_matcher = "TRUE" }
]],
      files = { ["d.lua"] = decoder },
      input = input,
    }
    assert.are.equal(0, r.status, r.stderr)
    local got = run.lines(r.stdout)
    run.write(r.dir .. "/d.lua", decoder)
    run.write(r.dir .. "/reference.lua", "local json_of = (function()\n"
              .. run.read("spec/modules/json_reference.lua") .. "\nend)()\n"
              .. "function process_message() return json_of(read_message, read_next_field) end\n")
    local dec = host.decoder(r.dir .. "/d.lua")
    local enc = host.encoder(r.dir .. "/reference.lua")
    assert.are.equal(#lines, #got)
    for i, line in ipairs(lines) do
      local _, err, messages = dec:decode(line)
      assert.are.equal(1, #messages, err)
      assert.are.equal(enc:encode(messages[1]), got[i])
    end
    run.cleanup(r.dir)
  end)
end)
