-- Record boundaries at a stop: a stop (a signal, an output that fails)
-- never hands on part of a line as a record. A file input with a state_dir
-- leaves the line to the resumed run; a stream's part of a line goes to the
-- dead-letter path with the reason. Checked record by record.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- Lines "record-1" .. "record-N"; returns the file's text.
local function records(n, prefix)
  local out = {}
  for i = 1, n do out[i] = (prefix or "record-") .. i end
  return table.concat(out, "\n") .. "\n"
end

-- Counts, in the lines of `texts` taken together, the expected lines lost,
-- those seen more than once and the lines that are no expected line.
local function check(expected, texts)
  local want, seen, torn, dup, lost = {}, {}, {}, 0, 0
  for _, line in ipairs(run.lines(expected)) do want[line] = true end
  for _, text in ipairs(texts) do
    for _, line in ipairs(run.lines(text)) do
      if not want[line] then torn[#torn + 1] = line
      elseif seen[line] then dup = dup + 1
      else seen[line] = true end
    end
  end
  for line in pairs(want) do if not seen[line] then lost = lost + 1 end end
  return {lost = lost, duplicates = dup, torn = torn}
end

-- The payloads of a dead-letter file, one per line, as text.
local function dead_payloads(path)
  local out = {}
  for _, line in ipairs(run.lines(run.read(path) or "")) do
    out[#out + 1] = cjson.decode(line).payload
  end
  return #out > 0 and table.concat(out, "\n") .. "\n" or ""
end

-- A command that runs lumberjit in dir with config, its log added to
-- dir/stderr.
local function start(dir, config)
  return string.format("cd %s && timeout -s KILL 60 %s -c %s 2>> stderr",
    run.quote(dir), run.quote(run.bin), config)
end

describe("a stop inside a line", function()
  it("leaves a file input's line to the resumed run (SIGTERM mid-read)", function()
    local dir = run.tmpdir()
    local input = records(1500000)
    run.write(dir .. "/big.txt", input)
    os.execute("mkdir " .. dir .. "/state")
    run.write(dir .. "/term.lua", [[
lumberjit = { dead_letter_path = "dl.log", state_dir = "state" }
i = { type = "file_input", path = "big.txt", decoder = "line" }
line = { type = "decoder", filename = "decoders/line.lua" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    -- Stopped three times while reading, at growing sizes of out.log, then
    -- run to the end: each stop lands inside some read.
    for _, at in ipairs({1000000, 5000000, 9000000}) do
      os.execute(string.format([[(%s & pid=$!
        for i in $(seq 3000); do [ "$(stat -c %%s %s/out.log 2>/dev/null || echo 0)" -ge %d ] && break; sleep 0.002; done
        kill -TERM $pid; wait $pid) 2>/dev/null]], start(dir, "term.lua"), run.quote(dir), at))
    end
    assert.are.equal(0, (os.execute(start(dir, "term.lua"))))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("SIGTERM", stderr)
    assert.matches("resuming big.txt at offset", stderr)
    local r = check(input, {run.read(dir .. "/out.log")})
    assert.are.same({}, r.torn)
    assert.are.equal(0, r.lost)
    assert.are.equal(0, r.duplicates)
    assert.are.equal("", run.read(dir .. "/dl.log") or "")
    run.cleanup(dir)
  end)

  it("puts no part of a line in the dead letters when an output fails", function()
    local dir = run.tmpdir()
    local input = records(200000, "line number ")
    run.write(dir .. "/in.txt", input)
    os.execute("mkdir " .. dir .. "/state")
    local config = [[
lumberjit = { dead_letter_path = "dl.log", state_dir = "state" }
i = { type = "file_input", path = "in.txt" }
out = { type = "file_output", path = "%s", message_matcher = "TRUE" }
]]
    run.write(dir .. "/full.lua", config:format("/dev/full"))
    run.write(dir .. "/good.lua", config:format("out.log"))
    local failed = run.in_dir(dir, "-c full.lua")
    assert.are.equal(1, failed.status)
    assert.matches("No space left on device", failed.stderr)
    assert.are.equal(0, run.in_dir(dir, "-c good.lua").status)
    -- What failed is in the dead letters, whole; the rest in out.log.
    local r = check(input, {dead_payloads(dir .. "/dl.log"), run.read(dir .. "/out.log")})
    assert.are.same({}, r.torn)
    assert.are.equal(0, r.lost)
    assert.are.equal(0, r.duplicates)
    run.cleanup(dir)
  end)

  it("dead-letters a stream's part of a line with the reason", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log" }
i = { type = "stdin_input" }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    -- The writer sends two lines and half of a third, then waits; the
    -- stop comes once the two are written.
    os.execute(string.format([[cd %s && mkfifo fifo && (%s -c config.lua < fifo 2> stderr & pid=$!
      exec 3> fifo; printf 'one\ntwo\nthr' >&3
      for i in $(seq 1000); do grep -q two out.log 2>/dev/null && break; sleep 0.01; done
      kill -TERM $pid; wait $pid; exec 3>&-)]], run.quote(dir), run.quote(run.bin)))
    assert.are.equal("one\ntwo\n", run.read(dir .. "/out.log"))
    local dl = cjson.decode(run.lines(run.read(dir .. "/dl.log"))[1])
    assert.are.equal("thr", dl.payload)
    assert.are.equal("input", dl.stage)
    assert.are.equal(3, dl.record)
    assert.matches("stopped inside this line", dl.reason)
    assert.matches("1 dead%-letter record", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)
end)
