-- The README's memory bound (Delivery: memory), measured: the peak RSS of
-- a run whose output stalls, and of a decoder that fans one record out
-- into many messages, stays under
--   base + memory_budget + every sandbox's memory_limit + the read buffers,
-- with base 16 MiB (the binary, its libraries, LuaJIT's code, the loop).
-- Under AddressSanitizer the shadow memory and the quarantine add their
-- own, so the bound there is the formula plus 96 MiB: still far below what
-- an unbounded run takes (1.2 GB for the fan-out before the bound).
local run = dofile("spec/e2e/run.lua")

local MiB = 1024 * 1024
local asan = io.popen(run.quote(run.bin) .. " --version"):read("*a"):find("AddressSanitizer", 1, true)
local BASE = 16 * MiB + (asan and 96 * MiB or 0)

-- Varied syslog lines, as W3's: hosts, pids, times and messages differ.
local function syslog_lines(n)
  local out = {}
  for i = 1, n do
    out[i] = string.format("<%d>May %2d %02d:%02d:%02d host%d app%d[%d]: request %d from 10.%d.%d.%d took %d ms user=u%d",
      i % 191, 1 + i % 28, i % 24, i % 60, (i * 7) % 60, i % 97, i % 13, 1000 + i % 5000, i,
      i % 256, (i * 3) % 256, (i * 7) % 256, (i * 13) % 1000, i % 977)
  end
  return table.concat(out, "\n") .. "\n"
end

-- Starts lumberjit in dir on config.lua, with output to a FIFO nobody
-- reads (held open so the output waits instead of failing); after
-- `seconds` reads its peak RSS (VmHWM, bytes), stops it with SIGTERM and
-- returns that and its exit status.
local function peak_while_stalled(dir, seconds)
  local out = io.popen(string.format([[cd %s && mkfifo fifo && exec 7<>fifo && (
    timeout -s KILL 60 %s -c config.lua 2> stderr & pid=$!
    sleep %s; child=$(tr -dc 0-9 < /proc/$pid/task/$pid/children)
    grep VmHWM /proc/$child/status | tr -dc 0-9; echo
    kill -TERM $child; wait $pid; echo $?)]], run.quote(dir), run.quote(run.bin), seconds)):read("*a")
  local kb, status = out:match("(%d+)\n(%d+)")
  return tonumber(kb) * 1024, tonumber(status)
end

describe("memory_budget", function()
  it("bounds the process while its output stalls", function()
    local dir = run.tmpdir()
    run.write(dir .. "/in.log", syslog_lines(300000))
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log", memory_budget = 4 * 1048576, workers = 1, stop_timeout_ms = 200 }
i = { type = "file_input", path = "in.log", decoder = "syslog" }
syslog = { type = "decoder", filename = "decoders/syslog.lua", memory_limit = 4 * 1048576 }
json = { type = "encoder", filename = "encoders/json.lua", memory_limit = 4 * 1048576 }
out = { type = "file_output", path = "fifo", encoder = "json", message_matcher = "TRUE" }
]])
    local peak, status = peak_while_stalled(dir, 2)
    -- base + budget + two sandboxes' memory_limit + a read of budget / 8
    local bound = BASE + 4 * MiB + 2 * 4 * MiB + MiB / 2
    assert.is_true(peak < bound, string.format("peak RSS %.1f MiB, bound %.1f MiB", peak / MiB, bound / MiB))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("inputs paused [1-9]%d* times", stderr)
    -- What the output held at the stop deadline failed and was dead-lettered.
    assert.are.equal(1, status)
    run.cleanup(dir)
  end)

  -- Before: 3 records of 1,000,000 messages each took 1,222 MiB with the
  -- budget at 32 MiB, and the summary said "inputs paused 0 times".
  it("holds a decoder's fan-out to its share, dead-lettering a record whose messages cannot fit", function()
    local dir = run.tmpdir()
    run.write(dir .. "/many.lua", [[
function process_message(line)
  if line == "MANY" then local p = string.rep("m", 200)
    for i = 1, 1000000 do inject_message({Payload = p}) end
  else inject_message({Payload = line}) end
end
]])
    run.write(dir .. "/config.lua", [[
lumberjit = { dead_letter_path = "dl.log", workers = 1 }
i = { type = "stdin_input", decoder = "many" }
many = { type = "decoder", filename = "many.lua", output_limit = 1073741824, cpu_limit_ms = 0 }
out = { type = "file_output", path = "out.log", message_matcher = "TRUE" }
]])
    run.write(dir .. "/in", "a\nMANY\nMANY\nMANY\nb\n")
    local r = run.in_dir(dir, "-c config.lua", dir .. "/in")
    assert.are.equal(0, r.status)
    assert.matches("decoder 'many': a call may make at most 1048576 bytes", r.stderr)
    assert.are.equal("a\nb\n", run.read(dir .. "/out.log"))
    local dead = run.lines(run.read(dir .. "/dl.log"))
    assert.are.equal(3, #dead)
    assert.matches('"reason":"output limit exceeded: limit 1048576 bytes', dead[1])
    local peak = tonumber(r.stderr:match("peak RSS ([%d.]+) MiB")) * MiB
    -- base + the default budget + the decoder's default memory_limit + a read
    local bound = BASE + 32 * MiB + 8 * MiB + MiB
    assert.is_true(peak < bound, string.format("peak RSS %.1f MiB, bound %.1f MiB", peak / MiB, bound / MiB))
    run.cleanup(dir)
  end)
end)
