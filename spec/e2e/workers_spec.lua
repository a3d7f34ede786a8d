-- Worker threads through the binary: decoders and encoders run on
-- `workers` threads, each input pinned to one, and every output keeps each
-- input's order.
local run = dofile("spec/e2e/run.lua")

local function numbered(tag, n)
  local out = {}
  for i = 1, n do out[i] = string.format("%s %06d %s", tag, i, string.rep("x", i % 30)) end
  return table.concat(out, "\n") .. "\n"
end

describe("workers", function()
  -- workers = 0: no threads, the plugins run on the loop thread.
  for _, workers in ipairs({2, 0}) do
  it("keep each input's order on every output, and the counts add up (workers = " .. workers .. ")", function()
    local n = 100000
    local r = run.lumberjit{
      config = [[
lumberjit = { workers = ]] .. workers .. [[, dead_letter_path = "dead.log", metrics_path = "m.prom" }
a = { type = "file_input", path = "a.log", decoder = "line" }
b = { type = "file_input", path = "b.log", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua" }
payload = { type = "encoder", filename = "encoders/payload.lua" }
all = { type = "file_output", path = "all.log", encoder = "payload", message_matcher = "TRUE" }
some = { type = "file_output", path = "some.log", encoder = "payload",
         message_matcher = "Payload =~ /^b/ || Payload =~ /^a 00/" }
]],
      files = {["a.log"] = numbered("a", n), ["b.log"] = numbered("b", n)},
    }
    assert.are.equal(0, r.status)
    for _, file in ipairs{"all.log", "some.log"} do
      local last, count = {a = 0, b = 0}, {a = 0, b = 0}
      local disorder = 0
      for _, line in ipairs(run.lines(run.read(r.dir .. "/" .. file))) do
        local tag, i = line:match("^(%a) (%d+)")
        i = tonumber(i)
        if i <= last[tag] then disorder = disorder + 1 end
        last[tag], count[tag] = i, count[tag] + 1
      end
      assert.are.equal(0, disorder)
      if file == "all.log" then assert.are.same({a = n, b = n}, count) end
    end
    assert.matches("input 'a': " .. n .. " records", r.stderr)
    assert.matches("input 'b': " .. n .. " records", r.stderr)
    assert.matches("output 'all': " .. 2 * n .. " delivered, 0 failed", r.stderr)
    assert.matches("output 'some': " .. (n + 9999) .. " delivered, 0 failed", r.stderr)
    -- The decoder's and the encoder's counts come back from where they ran.
    local metrics = run.read(r.dir .. "/m.prom")
    assert.matches('lumberjit_plugin_calls_total{plugin="line",kind="decoder"} ' .. 2 * n, metrics, 1, true)
    run.cleanup(r.dir)
  end)
  end
end)
