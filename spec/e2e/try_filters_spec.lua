-- --try with filters: the decoder's messages, then what came through the
-- config's filters in their order (as a worker runs them), what an inline
-- filter failed on, and each filter's last timer_event at the end; through
-- the real binary.
local run = dofile("spec/e2e/run.lua")

local T = "1779186617000000000"
local TIMESTAMP = "  Timestamp: 2026-05-19T10:30:17.000000000Z (1779186617000000000)\n"

local files = {
  ["d.lua"] = [[
function process_message(line)
  inject_message({Timestamp = ]] .. T .. [[, Payload = line})
end
]],
  -- Splits on commas; drops "noise"; fails on "boom".
  ["split.lua"] = [[
function process_message()
  local p = read_message("Payload")
  if p == "noise" then return 0 end
  if p == "boom" then error("boom!") end
  for part in p:gmatch("[^,]+") do
    inject_message({Timestamp = ]] .. T .. [[, Payload = part})
  end
  return 0
end
]],
  -- Counts what it sees; says so at each timer_event.
  ["count.lua"] = [[
local n = 0
function process_message() n = n + 1 return 0 end
function timer_event(ns, shutdown)
  inject_message({Timestamp = ]] .. T .. [[, Type = "count",
                  Payload = n .. (shutdown and " at the end" or "")})
end
]],
  ["config.lua"] = [[
d = { type = "decoder", filename = "d.lua" }
split = { type = "filter", filename = "split.lua", message_matcher = "Type != 'count'" }
count = { type = "filter", filename = "count.lua", message_matcher = "TRUE", mode = "tap",
          ticker_interval_ms = 60000 }
]],
}

local function try(lines)
  local dir = run.tmpdir()
  for name, text in pairs(files) do run.write(dir .. "/" .. name, text) end
  run.write(dir .. "/sample", lines)
  local r = run.in_dir(dir, "-c config.lua --try d sample")
  run.cleanup(dir)
  return r
end

describe("--try with filters", function()
  it("shows the decoder's messages, then what came through the filters", function()
    local r = try("a,b\nnoise\n")
    assert.are.equal(0, r.status, r.stderr)
    assert.are.equal(
      "sample:1: 1 message\n" .. TIMESTAMP .. '  Payload: "a,b"\n' ..
      "  after the filters: 2 messages\n" ..
      "  -- message 1 of 2\n" .. TIMESTAMP .. '  Payload: "a"\n' ..
      "  -- message 2 of 2\n" .. TIMESTAMP .. '  Payload: "b"\n' ..
      "sample:2: 1 message\n" .. TIMESTAMP .. '  Payload: "noise"\n' ..
      "  after the filters: 0 messages\n" ..
      "filter 'count' timer_event (shutdown): 1 message\n" .. TIMESTAMP ..
      '  Type: "count"\n' .. '  Payload: "2 at the end"\n', r.stdout)
    assert.matches("filter split: 2 matched, 2 injected, 1 dropped, 0 failed; " ..
                   "filter count: 2 matched, 1 injected, 0 dropped, 0 failed", r.stderr)
  end)

  it("says where an inline filter failed, and exits 1", function()
    local r = try("boom\nc\n")
    assert.are.equal(1, r.status)
    local expected = "sample:1: 1 message\n" .. TIMESTAMP .. '  Payload: "boom"\n' ..
                     "  filter 'split' failed: "
    assert.are.equal(expected, r.stdout:sub(1, #expected))
    assert.matches("failed: [^\n]*split%.lua:4: boom!\n  after the filters: 0 messages\nsample:2:",
                   r.stdout)
    assert.matches("filter split: 2 matched, 1 injected, 0 dropped, 1 failed", r.stderr)
  end)
end)
