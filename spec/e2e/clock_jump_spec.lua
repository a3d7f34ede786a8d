-- A clock that jumps (issue 28, §4): an edge box starts with its clock
-- years behind, until NTP steps it forward; a clock that ran ahead is
-- stepped back. lumberjit runs under libfaketime (Debian's libfaketime),
-- whose offset the spec changes while it runs (FAKETIME_TIMESTAMP_FILE,
-- FAKETIME_NO_CACHE). Only the wall clock jumps (DONT_FAKE_MONOTONIC):
-- that is what NTP steps; CLOCK_MONOTONIC, which libuv's timers and every
-- duration lumberjit measures use, never does.
--
-- Through the jumps: a generator capped at RATE lines/s keeps its rate (no
-- burst after a forward jump, no stall after a backward one); a tailed
-- file's checkpoint keeps being saved; a last line without its newline is
-- handed on after last_line_timeout_ms, not years later; the latency
-- figures at exit are neither negative nor huge; the log does not fill with
-- a storm of lines; and RFC 3164 timestamps (which carry no year) get the
-- year the clock says, across New Year both ways.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

local FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
local RATE = 1000

-- The plugins run without cpu_limit_ms: libfaketime shifts the CPU-time
-- clock of another thread (pthread_getcpuclockid's, which the sandboxes'
-- watchdog reads) by its offset too, so a call that spans a step would
-- seem to take years. No kernel steps a CPU-time clock.
local CONFIG = [[
lumberjit = { state_dir = "state", checkpoint_interval_ms = 200, dead_letter_path = "dead.log",
              stop_timeout_ms = 2000 }
gen = { type = "generator_input", rate = ]] .. RATE .. [[ }
syslog = { type = "decoder", filename = "decoders/syslog.lua", cpu_limit_ms = 0 }
json = { type = "encoder", filename = "encoders/json.lua", cpu_limit_ms = 0 }
app = { type = "tail_input", paths = { "app.log" }, read_from_head = true, decoder = "syslog",
        scan_interval_ms = 100, last_line_timeout_ms = 500 }
gen_out = { type = "file_output", path = "gen.log", message_matcher = "Fields[path] == NIL" }
app_out = { type = "file_output", path = "app.json", encoder = "json", message_matcher = "Fields[path] != NIL" }
]]

local function now_real()
  local p = io.popen("date +%s.%N")
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

-- Seconds since the epoch of a UTC civil time (the spec's own clock is
-- not faked: it runs outside libfaketime).
local function epoch(y, m, d, hh, mm, ss)
  local p = io.popen(string.format("date -u -d '%04d-%02d-%02d %02d:%02d:%02d' +%%s", y, m, d, hh, mm, ss))
  local t = tonumber(p:read("*l"))
  p:close()
  return t
end

local function year_of_ns(ns)
  local p = io.popen("date -u -d @" .. math.floor(ns / 1e9) .. " +%Y")
  local y = tonumber(p:read("*l"))
  p:close()
  return y
end

-- Sets lumberjit's wall clock to `target` (epoch seconds) by the offset
-- from the real clock, which libfaketime reads at every call.
local function set_clock(dir, target)
  run.write(dir .. "/faketime", string.format("%+d\n", math.floor(target - now_real())))
end

local function append(dir, text)
  local f = assert(io.open(dir .. "/app.log", "ab"))
  f:write(text)
  f:close()
end

local function records(dir)
  local out = {}
  for _, line in ipairs(run.lines(run.read(dir .. "/app.json"))) do
    local ok, rec = pcall(cjson.decode, line)
    if ok and rec.message then out[rec.message] = rec end
  end
  return out
end

local function checkpoint_offset(dir)
  return tonumber((run.read(dir .. "/state/checkpoints") or ""):match("file app%.log\n.-offset (%d+)"))
end

describe("a clock that jumps", function()
  it("moves no timer, rate, checkpoint or latency, and infers RFC 3164 years from the clock", function()
    assert.truthy(io.open(FAKETIME), "libfaketime is not installed: run scripts/setup")
    local dir = h.tmpdir()
    h.sh(dir, "mkdir state && : > app.log")
    run.write(dir .. "/config.lua", CONFIG)
    local this_year = tonumber(io.popen("date -u +%Y"):read("*l"))
    -- Six years behind, as a box without a battery-backed clock starts.
    local real_start = now_real()
    set_clock(dir, real_start - 6 * 365 * 86400)
    finally(function()
      h.terminate(dir, "lumberjit", 10)
      h.cleanup(dir)
    end)
    -- An AddressSanitizer build (CI's second run) needs its runtime first.
    local asan = run.asan_runtime()
    local preload = (asan and asan .. ":" or "") .. FAKETIME
    h.spawn(dir, "lumberjit", string.format("env LD_PRELOAD=%s FAKETIME_TIMESTAMP_FILE=%s/faketime "
      .. "FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1 %s -c config.lua", preload, dir, run.quote(run.bin)), 60)

    -- Each step: the wall clock is set, a line is tailed, and it must be
    -- read (and its checkpoint saved) within seconds whatever the jump.
    local steps = {
      -- { what, the clock set (false: left running), the line's timestamp,
      --   the year it must get (nil: the clock's) }
      { "six years behind", real_start - 6 * 365 * 86400, "Mar  3 10:00:00" },
      { "stepped forward to now", "now", "Mar  3 10:00:01" },
      { "New Year's Eve", epoch(this_year, 12, 31, 23, 59, 50), "Jan  1 00:00:05", this_year + 1 },
      { "New Year's Eve, late December", false, "Dec 31 23:59:40", this_year },
      { "New Year's Day", epoch(this_year + 1, 1, 1, 0, 0, 20), "Dec 31 23:59:55", this_year },
      { "stepped back three years", epoch(this_year - 3, 6, 15, 12, 0, 0), "Jun 15 11:59:00", this_year - 3 },
      -- A text seen (on New Year's Day) before the step back: its year is
      -- inferred again, now last year's December.
      { "a text seen before, after the step back", false, "Dec 31 23:59:55", this_year - 4 },
      { "forward again", epoch(this_year, 6, 15, 12, 0, 0), "Jun 15 11:58:00", this_year },
    }
    for i, step in ipairs(steps) do
      local target = step[2] == "now" and now_real() or step[2]
      if target then set_clock(dir, target) end
      local payload = "step " .. i .. ": " .. step[1]
      local before = run.size(dir .. "/app.log")
      append(dir, "<13>" .. step[3] .. " edge app: " .. payload .. "\n")
      local size = run.size(dir .. "/app.log")
      assert.truthy(h.wait_until(function() return records(dir)[payload] end, 5),
        payload .. " was not read\n" .. (run.read(dir .. "/lumberjit.err") or ""))
      assert.truthy(h.wait_until(function() return (checkpoint_offset(dir) or 0) >= size end, 5),
        payload .. ": the checkpoint stayed at " .. tostring(checkpoint_offset(dir)) .. " (from " .. before .. ")")
      local want = step[4] or year_of_ns(target * 1e9)
      assert.are.equal(want, tonumber(records(dir)[payload]["@timestamp"]:sub(1, 4)), payload)
      h.sleep(0.5)
    end
    -- After a step back: a last line without its newline is handed on after
    -- last_line_timeout_ms (500 ms), not once the clock is back.
    set_clock(dir, real_start - 10 * 365 * 86400)
    local t0 = now_real()
    append(dir, "<13>Jun 15 11:57:00 edge app: no newline after a step back")
    assert.truthy(h.wait_until(function() return records(dir)["no newline after a step back"] end, 5))
    local waited = now_real() - t0
    assert.is_true(waited >= 0.4 and waited < 3, "handed on after " .. waited .. " s")

    local status = h.terminate(dir, "lumberjit", 30)
    local elapsed = now_real() - real_start
    local log = run.read(dir .. "/lumberjit.err") or ""
    assert.are.equal(0, status, log)
    -- The rate held: RATE lines a second of real time, give or take the
    -- start (the generator begins once lumberjit is up) and a loaded machine.
    local made = #run.lines(run.read(dir .. "/gen.log"))
    assert.is_true(made <= RATE * elapsed + 2000 and made >= RATE * (elapsed - 3) * 0.8,
      made .. " lines in " .. elapsed .. " s\n" .. log)
    -- Latency from read to acknowledged, from the monotonic clock.
    for name, p50, max in log:gmatch("output '(%w+)': latency from read to acknowledged p50 ([%d.-]+) ms.-max ([%d.-]+) ms") do
      assert.is_true(tonumber(p50) >= 0 and tonumber(max) >= 0 and tonumber(max) < 5000, name .. ": " .. log)
    end
    assert.truthy(log:find("latency from read to acknowledged", 1, true), log)
    -- A few lines of start and summary, not a storm.
    assert.is_true(#run.lines(log) < 40, log)
  end)
end)
