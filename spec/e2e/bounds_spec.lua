-- Bounds that hold (issue 23): every message accounted for, in the summary
-- and the metrics file; the dead-letter file capped and rotated, what does
-- not fit counted as failed.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- The value of a metric with its labels, e.g. metric(text, 'lumberjit_input_messages_total{input="i"}').
local function metric(text, name)
  local v = text:match("\n" .. name:gsub("%p", "%%%0") .. " (%d+)")
  return tonumber(v)
end

describe("message accounting", function()
  it("counts the records a decoder made no message of, and the messages it made", function()
    local dir = run.tmpdir()
    run.write(dir .. "/fan.lua", [[
function process_message(line)
  if line == "none" then return 0 end
  local n = line == "two" and 2 or 1
  for i = 1, n do inject_message({Payload = line .. i, Type = i == 2 and "second" or "first"}) end
  return 0
end
]])
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log", metrics_path = "metrics.prom" }
i = { type = "stdin_input", decoder = "fan" }
fan = { type = "decoder", filename = "fan.lua" }
firsts = { type = "file_output", path = "first.log", message_matcher = "Type == 'first'" }
all = { type = "file_output", path = "all.log", message_matcher = "TRUE" }
]])
    run.write(dir .. "/in", "one\nnone\ntwo\nnone\nthree\n")
    local r = run.in_dir(dir, "-c config.lua", dir .. "/in")
    assert.are.equal(0, r.status)
    -- 5 records: 2 made none, 3 made 4 messages; "firsts" matched 3.
    assert.matches("input 'i': 5 records %(0 longer than max_line, 0 pieces truncated%), 0 dead%-letter records; 4 messages made of them, 2 records made none", r.stderr)
    assert.matches("output 'firsts': 3 delivered, 0 failed, 0 skipped, 0 left for the next run, 0 queued, of 3 messages matched", r.stderr)
    assert.matches("output 'all': 4 delivered, 0 failed, 0 skipped, 0 left for the next run, 0 queued, of 4 messages matched", r.stderr)
    local m = run.read(dir .. "/metrics.prom")
    assert.are.equal(5, metric(m, 'lumberjit_input_records_total{input="i"}'))
    assert.are.equal(4, metric(m, 'lumberjit_input_messages_total{input="i"}'))
    assert.are.equal(2, metric(m, 'lumberjit_input_empty_records_total{input="i"}'))
    -- Per output: made = matched + not matched by it; matched = delivered
    -- + failed + skipped + left for the next run + queued.
    for _, out in ipairs({"firsts", "all"}) do
      local label = '{output="' .. out .. '"}'
      local matched = metric(m, "lumberjit_output_matched_messages_total" .. label)
      assert.are.equal(matched, metric(m, "lumberjit_output_delivered_records_total" .. label)
        + metric(m, "lumberjit_output_failed_records_total" .. label)
        + metric(m, "lumberjit_output_skipped_records_total" .. label)
        + metric(m, "lumberjit_output_released_records_total" .. label)
        + metric(m, "lumberjit_output_queued_records" .. label))
    end
    assert.are.equal(3, #run.lines(run.read(dir .. "/first.log")))
    run.cleanup(dir)
  end)
end)

describe("the dead-letter path", function()
  -- Before: 213 MB of dead letters in 3 s from /dev/zero.
  it("is capped at dead_letter_max_bytes, rotated through dead_letter_keep files, and counts the rest as failed", function()
    local dir = run.tmpdir()
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log", dead_letter_max_bytes = 200000, dead_letter_keep = 2 }
zero = { type = "file_input", path = "/dev/zero", max_line = 1024 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    os.execute(string.format("cd %s && timeout --preserve-status -s TERM 2 %s -c config.lua 2> stderr; echo $? > status",
      run.quote(dir), run.quote(run.bin)))
    assert.are.equal("1", run.read(dir .. "/status"):match("%d+"))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("dl.log reached 200000 bytes: rotated to dl.log.1", stderr)
    assert.matches("dl.log is full: 200000 bytes in it and 2 rotated files", stderr)
    local refused = tonumber(stderr:match("(%d+) dead%-letter records could not be written because the dead%-letter path was full"))
    assert.is_true(refused > 0)
    -- The "is full" line is logged once, then at most every 10 s.
    local _, full_lines = stderr:gsub("records refused so far", "")
    assert.is_true(full_lines <= 2, full_lines .. " lines")
    local records = 0
    for _, name in ipairs({"dl.log", "dl.log.1", "dl.log.2"}) do
      local text = run.read(dir .. "/" .. name)
      -- A file holds whole records, and no more than the cap plus one.
      assert.is_true(#text <= 200000 + 7000, name .. ": " .. #text)
      for _, line in ipairs(run.lines(text)) do
        assert.are.equal("input", cjson.decode(line).stage)
        records = records + 1
      end
    end
    assert.is_nil(run.read(dir .. "/dl.log.3"))
    local dead, written, lost = stderr:match("(%d+) dead%-letter records %((%d+) written, (%d+) could not be written%)")
    assert.are.equal(records, tonumber(written))
    assert.are.equal(tonumber(dead), tonumber(written) + tonumber(lost))
    assert.are.equal(refused, tonumber(lost))
    run.cleanup(dir)
  end)
end)
