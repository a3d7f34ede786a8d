-- Output failures, odd inputs and signals, through the binary. Each case
-- says what 8ee37c4 did; every run checks the accounting: each record read
-- is written, dead-lettered, or counted as failed with exit status 1.
local run = dofile("spec/e2e/run.lua")
local cjson = require("cjson")

-- Runs a bash script in a fresh directory holding `files`; returns the
-- script's stdout (the last line is usually an exit status) and the dir.
local function bash(script, files)
  local dir = run.tmpdir()
  for name, text in pairs(files or {}) do run.write(dir .. "/" .. name, text) end
  run.write(dir .. "/script.sh", "set -u\ncd " .. run.quote(dir) .. "\nLJ=" .. run.quote(run.bin)
    .. "\n" .. script)
  local out = io.popen("bash " .. run.quote(dir .. "/script.sh") .. " 2>&1"):read("*a")
  return out, dir
end

local function last_number(text)
  return tonumber(text:match("(%d+)%s*$"))
end

local function count_lines(path)
  return #run.lines(run.read(path) or "")
end

-- The summary lumberjit logs at exit, as numbers.
local function summary(stderr)
  local s = {}
  s.records = tonumber(stderr:match("input '[^']+': (%d+) records"))
  -- The input's dead letters: a line a stop came inside of (or longer than
  -- max_line) is neither delivered nor failed.
  s.input_dead = tonumber(stderr:match("input '[^']+': %d+ records %b(), (%d+) dead%-letter records"))
  s.delivered, s.failed = stderr:match("output 'out': (%d+) delivered, (%d+) failed")
  s.delivered, s.failed = tonumber(s.delivered), tonumber(s.failed)
  s.dead, s.dead_written, s.dead_lost =
    stderr:match("(%d+) dead%-letter records %((%d+) written, (%d+) could not be written%)")
  s.dead, s.dead_written, s.dead_lost = tonumber(s.dead), tonumber(s.dead_written), tonumber(s.dead_lost)
  return s
end

-- Varied lines, so that no two records are alike.
local function lines(n, width)
  local out = {}
  for i = 1, n do
    out[i] = string.format("<%d>Nov %2d 10:%02d:%02d host%d app[%d]: event %d %s", i % 192, 1 + i % 28,
      i % 60, (i * 7) % 60, i % 13, 1000 + i, i, string.rep("x", (i * 37) % (width or 40)))
  end
  return table.concat(out, "\n") .. "\n"
end

local plain = [[
lumberjit = { dead_letter_path = "dead.log", stop_timeout_ms = 500 }
stdin = { type = "stdin_input" }
out = { type = "%s", %s message_matcher = "TRUE" }
]]

local function config(output, path)
  return plain:format(output, path and ('path = "' .. path .. '",') or "")
end

-- Every record read is on the output, in the dead-letter file or counted
-- as a dead letter that could not be written; the files agree with the
-- summary.
local function assert_accounted(s, out_lines, dead_lines)
  assert.is_number(s.records)
  assert.are.equal(s.records, s.delivered + s.failed + s.input_dead)
  assert.are.equal(s.delivered, out_lines)
  assert.are.equal(s.dead_written, dead_lines)
  assert.are.equal(s.dead, s.dead_written + s.dead_lost)
end

describe("output failures", function()
  -- Before: "2000000 delivered", nothing written, exit 0.
  it("dead-letters every record of an output to /dev/full and fails the run", function()
    local out, dir = bash([[
timeout --foreground -s KILL 30 "$LJ" -c config.lua < input > /dev/null 2> stderr; echo $?
]], {["config.lua"] = config("file_output", "/dev/full"), input = lines(5000)})
    assert.are.equal(1, last_number(out))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("output 'out' failed: write to /dev/full failed: No space left on device", stderr)
    local s = summary(stderr)
    assert.are.equal(5000, s.records)
    assert.are.equal(0, s.delivered)
    assert_accounted(s, 0, count_lines(dir .. "/dead.log"))
    local first = cjson.decode(run.lines(run.read(dir .. "/dead.log"))[1])
    assert.are.equal("output", first.stage)
    assert.are.equal("out", first.plugin)
    assert.are.equal(lines(1):sub(1, -2), first.payload) -- the record, without the output's newline
    run.cleanup(dir)
  end)

  -- Before: EPIPE lost ~2M records, the summary said delivered, exit 0.
  it("stops on a closed reader and accounts for every record read", function()
    local out, dir = bash([[
timeout --foreground -s KILL 30 "$LJ" -c config.lua < input 2> stderr | head -1 > head.out
echo "${PIPESTATUS[0]}"
]], {["config.lua"] = config("stdout_output"), input = lines(300000)})
    assert.are.equal(1, last_number(out))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("output 'out' failed: write to standard output failed: Broken pipe", stderr)
    local s = summary(stderr)
    assert.is_true(s.delivered >= 1 and s.failed >= 1)
    assert_accounted(s, s.delivered, count_lines(dir .. "/dead.log"))
    run.cleanup(dir)
  end)

  -- Before: dead letters lost, exit 0.
  it("fails the run when the dead-letter path cannot be written", function()
    local out, dir = bash([[
printf 'ok\n%s\nok2\n' "$(printf 'y%.0s' $(seq 40))" | timeout --foreground -s KILL 30 "$LJ" -c config.lua > stdout 2> stderr
echo $?
]], {["config.lua"] = [[
lumberjit = { dead_letter_path = "/dev/full" }
stdin = { type = "stdin_input", max_line = 16 }
out = { type = "stdout_output", message_matcher = "TRUE" }
]]})
    assert.are.equal(1, last_number(out))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("dead%-letter path failed: write to /dev/full failed", stderr)
    assert.matches("3 dead%-letter records %(0 written, 3 could not be written%)", stderr)
    -- The run stops at the failure: "ok2" may not have been read by then.
    local out_lines = run.lines(run.read(dir .. "/stdout"))
    assert.are.equal("ok", out_lines[1])
    assert.matches("output 'out': " .. #out_lines .. " delivered, 0 failed", stderr)
    run.cleanup(dir)
  end)
end)

describe("a filling filesystem", function()
  -- Mounts a small tmpfs with a filler file in it; nil when mounting is
  -- not allowed here (not root).
  local function mount_full(dir, size_kb, filler_kb)
    local ok = os.execute(string.format("mkdir -p %s/fs && mount -t tmpfs -o size=%dk tmpfs %s/fs 2>/dev/null",
      dir, size_kb, dir))
    if ok ~= 0 and ok ~= true then return nil end
    os.execute(string.format("dd if=/dev/zero of=%s/fs/filler bs=1k count=%d 2>/dev/null", dir, filler_kb))
    return true
  end

  local function unmount(dir)
    os.execute("umount " .. dir .. "/fs 2>/dev/null")
  end

  local fill_config = [[
lumberjit = { dead_letter_path = "dead.log", stop_timeout_ms = 500 }
stdin = { type = "stdin_input" }
out = { type = "file_output", path = "fs/out.log", message_matcher = "TRUE" }
]]

  -- Runs lumberjit on `input` into a 1 MiB tmpfs that is 900 KiB full;
  -- once stderr says the output holds, runs the shell command `then_do`.
  -- Returns the exit status, stderr, what the output file holds and the
  -- directory; nil when mounting is not allowed here (not root).
  local function on_full_disk(input, then_do)
    local dir = run.tmpdir()
    if not mount_full(dir, 1024, 900) then
      run.cleanup(dir)
      return nil
    end
    run.write(dir .. "/config.lua", fill_config)
    run.write(dir .. "/input", input)
    local out = io.popen("bash -c " .. run.quote("cd " .. dir .. "\nLJ=" .. run.quote(run.bin) .. [[

timeout --foreground -s KILL 60 "$LJ" -c config.lua < input > /dev/null 2> stderr &
pid=$!
for i in $(seq 300); do grep -q holding stderr 2>/dev/null && break; sleep 0.05; done
]] .. then_do .. "\nwait $pid; echo $?\n")):read("*a")
    local written = run.read(dir .. "/fs/out.log")
    unmount(dir)
    return last_number(out), run.read(dir .. "/stderr"), written, dir
  end

  -- Before: one torn JSON line, the rest gone, "delivered" for all, exit 0;
  -- once space came back, two records were merged on one line.
  it("holds the input while the disk is full and resumes when space frees", function()
    local input = lines(8000)
    local status, stderr, written, dir = on_full_disk(input, "sleep 0.3; rm fs/filler")
    if not status then return pending("mounting a tmpfs is not allowed here") end
    assert.are.equal(0, status)
    assert.matches("holding its records and retrying", stderr)
    assert.matches("writing to fs/out.log again", stderr)
    assert.are.equal(input, written) -- every line once, whole, in order
    run.cleanup(dir)
  end)

  it("never tears a record, and dead-letters what is left at a stop", function()
    local input = lines(20000)
    local status, stderr, written, dir = on_full_disk(input, "sleep 0.3; kill -TERM $pid")
    if not status then return pending("mounting a tmpfs is not allowed here") end
    assert.are.equal(1, status)
    local s = summary(stderr)
    assert.are.equal(20000, s.records)
    local out_lines = run.lines(written)
    assert.are.equal("\n", written:sub(-1))
    -- Whole lines only, each the next input line: no torn or merged record.
    local want = run.lines(input)
    for i, line in ipairs(out_lines) do assert.are.equal(want[i], line) end
    local dead = run.lines(run.read(dir .. "/dead.log"))
    for i, line in ipairs(dead) do
      assert.are.equal(want[#out_lines + i], cjson.decode(line).payload)
    end
    assert_accounted(s, #out_lines, #dead)
    assert.are.equal(20000, #out_lines + #dead)
    run.cleanup(dir)
  end)
end)

describe("stopping", function()
  -- Before: the unterminated last line was dropped; later it was handed on
  -- as a record, though its writer had not ended it (a torn record).
  it("dead-letters the part of a line read before SIGTERM", function()
    local out, dir = bash([[
mkfifo feed
(printf 'one\ntwo'; exec sleep 30) > feed &
feeder=$!
timeout --foreground -s KILL 30 "$LJ" -c config.lua < feed > stdout 2> stderr &
pid=$!
for i in $(seq 200); do grep -q one stdout 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
wait $pid; echo $?
kill $feeder
]], {["config.lua"] = config("stdout_output")})
    assert.are.equal(0, last_number(out))
    assert.are.same({"one"}, run.lines(run.read(dir .. "/stdout")))
    local dead = cjson.decode(run.read(dir .. "/dead.log"))
    assert.are.equal("two", dead.payload)
    assert.are.equal("the run stopped inside this line: the rest of it was not read", dead.reason)
    local s = summary(run.read(dir .. "/stderr"))
    assert_accounted(s, 1, 1)
    run.cleanup(dir)
  end)

  -- Runs lumberjit on 140 MB of lines, writing to a FIFO whose reader
  -- never reads; `meanwhile` runs before the SIGTERM ($child is lumberjit).
  local function stalled_reader(config_text, meanwhile)
    return bash([[
yes "$(seq -s ' ' 60)" | head -n 800000 > input
mkfifo pipe
exec 7<>pipe
timeout --foreground -s KILL 30 "$LJ" -c config.lua < input > pipe 2> stderr &
pid=$!
sleep 0.2
child=$(tr -dc 0-9 < /proc/$pid/task/$pid/children)
]] .. meanwhile .. [[

kill -TERM $pid
wait $pid; echo $?
exec 7<&-
]], {["config.lua"] = config_text})
  end

  -- Before: a stop signal while the stdout reader stalled never stopped it.
  it("stops with a stalled stdout reader, failing what it still holds", function()
    local out, dir = stalled_reader(config("stdout_output"), "sleep 0.3")
    assert.are.equal(1, last_number(out))
    local stderr = run.read(dir .. "/stderr")
    assert.matches("outputs still hold records at the stop deadline", stderr)
    local s = summary(stderr)
    assert.is_true(s.failed > 0)
    assert.are.equal(s.records, s.delivered + s.failed + s.input_dead)
    assert.are.equal(s.failed + s.input_dead, count_lines(dir .. "/dead.log"))
    run.cleanup(dir)
  end)

  -- Before: writes blocked the loop on a stalled reader, and nothing
  -- bounded what was queued.
  it("pauses the input on a stalled reader, within memory_budget", function()
    local out, dir = stalled_reader([[
lumberjit = { dead_letter_path = "dead.log", stop_timeout_ms = 200, memory_budget = 4e6 }
stdin = { type = "stdin_input" }
out = { type = "stdout_output", message_matcher = "TRUE" }
]], "sleep 1.3; grep VmRSS /proc/$child/status | tr -dc 0-9; echo")
    local rss = tonumber(out:match("(%d+)\n%d+%s*$"))
    assert.are.equal(1, last_number(out)) -- what was queued failed at the deadline
    local stderr = run.read(dir .. "/stderr")
    local s = summary(stderr)
    assert.is_true(tonumber(stderr:match("inputs paused (%d+) times")) >= 1)
    -- 4 MB of queue, reads in flight, the binary (and, under ASan, its
    -- shadow memory): far from the 140 MB of input.
    assert.is_true(rss < 48 * 1024, "VmRSS " .. rss .. " kB")
    assert.is_true(s.records < 800000)
    assert.are.equal(s.records, s.delivered + s.failed + s.input_dead)
    run.cleanup(dir)
  end)

  -- Before: SIGHUP during a slow start killed the process (status 129).
  it("survives a SIGHUP during a slow start", function()
    local out, dir = bash([[
echo hello > input
timeout --foreground -s KILL 30 "$LJ" -c config.lua < input > stdout 2> stderr &
pid=$!
sleep 0.3
kill -HUP $pid
wait $pid; echo $?
]], {
      ["config.lua"] = [[
stdin = { type = "stdin_input", decoder = "slow" }
slow = { type = "decoder", filename = "slow.lua", cpu_limit_ms = 5000 }
out = { type = "stdout_output", message_matcher = "TRUE" }
]],
      ["slow.lua"] = [[
local t0 = os.clock()
while os.clock() - t0 < 1 do end
function process_message(line) inject_message({Payload = line}) end
]],
    })
    assert.are.equal(0, last_number(out))
    assert.are.same({"hello"}, run.lines(run.read(dir .. "/stdout")))
    run.cleanup(dir)
  end)
end)

describe("odd inputs", function()
  local function stdin_run(redirect)
    local out, dir = bash('timeout --foreground -s KILL 30 "$LJ" -c config.lua ' .. redirect
      .. ' > stdout 2> stderr; echo $?', {["config.lua"] = config("stdout_output")})
    local stderr = run.read(dir .. "/stderr")
    run.cleanup(dir)
    return last_number(out), stderr
  end

  -- Before: each of these died of SIGABRT in libuv, or wrote into libuv's
  -- own fds.
  it("reads /dev/null and refuses a closed or a directory stdin clearly", function()
    local status, stderr = stdin_run("< /dev/null")
    assert.are.equal(0, status)
    assert.matches("input 'stdin': 0 records", stderr)
    status, stderr = stdin_run("<&-")
    assert.are.equal(1, status)
    assert.matches("input 'stdin' uses standard input, which is closed", stderr)
    status, stderr = stdin_run("< /")
    assert.are.equal(1, status)
    assert.matches("input 'stdin': standard input is a directory", stderr)
  end)

  it("refuses a closed stdout for a stdout output", function()
    local out, dir = bash('timeout --foreground -s KILL 30 "$LJ" -c config.lua < /dev/null >&- 2> stderr; echo $?',
      {["config.lua"] = config("stdout_output")})
    assert.are.equal(1, last_number(out))
    assert.matches("output 'out' uses standard output, which is closed", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)

  local function file_input(path, script)
    return bash((script or 'timeout --foreground -s KILL 30 "$LJ" -c config.lua > stdout 2> stderr; echo $?'), {
      ["config.lua"] = [[
lumberjit = { dead_letter_path = "dead.log", stop_timeout_ms = 500 }
file = { type = "file_input", path = "]] .. path .. [[", max_line = 1024 }
out = { type = "stdout_output", message_matcher = "TRUE" }
]]})
  end

  it("reads character devices: /dev/null to its end, /dev/zero until stopped", function()
    local out, dir = file_input("/dev/null")
    assert.are.equal(0, last_number(out))
    run.cleanup(dir)
    out, dir = file_input("/dev/zero", [[
timeout --foreground -s KILL 30 "$LJ" -c config.lua > stdout 2> stderr &
pid=$!
sleep 0.2
kill -TERM $pid
wait $pid; echo $?
]])
    assert.are.equal(0, last_number(out))
    local stderr = run.read(dir .. "/stderr")
    -- One line, dead-lettered in pieces, and (unless the stop came at a
    -- piece's end) its last bytes, cut at the stop: records of their own.
    local dead, pieces = stderr:match("input 'file': %d+ records %(1 longer than max_line, 0 pieces truncated%), "
      .. "(%d+) dead%-letter records %(overlong ones in (%d+) pieces%)")
    dead, pieces = tonumber(dead), tonumber(pieces)
    assert.is_true(pieces > 0 and (dead == 1 or dead == 2), stderr)
    assert.are.equal(pieces + dead - 1, count_lines(dir .. "/dead.log"))
    run.cleanup(dir)
  end)

  -- Before: open() blocked for ever and SIGTERM was ignored.
  it("waits on a FIFO without a writer and stops at SIGTERM", function()
    local out, dir = file_input("fifo", [[
mkfifo fifo
timeout --foreground -s KILL 30 "$LJ" -c config.lua > stdout 2> stderr &
pid=$!
sleep 0.5
kill -TERM $pid
wait $pid; echo $?
]])
    assert.are.equal(0, last_number(out))
    assert.matches("SIGTERM: stopping", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)

  it("reads a FIFO until its writer closes it", function()
    local out, dir = file_input("fifo", [[
mkfifo fifo
timeout --foreground -s KILL 30 "$LJ" -c config.lua > stdout 2> stderr &
pid=$!
printf 'a\nb\n' > fifo
wait $pid; echo $?
]])
    assert.are.equal(0, last_number(out))
    assert.are.same({"a", "b"}, run.lines(run.read(dir .. "/stdout")))
    run.cleanup(dir)
  end)
end)
