-- tail_input's file identity (issue 22, section 2): device and inode tell
-- files apart; bytes only confirm that a file still holds what was read
-- and that a new file is a copytruncate copy of a truncated one. Each case
-- failed on 8a07ef3: a shared banner made a new file "a copy", a small
-- file's copytruncate lost lines, a truncation rewritten past the offset
-- gave a torn record and duplicates (or, while lumberjit was down, a
-- resume in the middle of a line), a half-written line was handed on
-- torn at a truncation, and a copy shorter than the offset read was
-- "truncated" again at every scan.
local h = dofile("spec/e2e/tail_harness.lua")
local run = h.run

local function out_lines(dir)
  return run.lines(run.read(dir .. "/out.log") or "")
end

local function assert_whole_once(want, dir)
  local r = h.check(want, out_lines(dir))
  assert.are.same({ 0, 0, 0, 0 }, { r.lost, r.dups, r.torn, r.disorder }, r.text)
end

-- Waits (up to 10 s) until stderr has n matches of the Lua pattern.
local function wait_stderr(dir, pattern, n)
  for _ = 1, 200 do
    if h.count_matching(run.read(dir .. "/stderr"), pattern) >= n then return end
    h.sleep(0.05)
  end
end

describe("tail_input file identity", function()
  it("never takes a new file that shares a file's banner for its copy", function()
    local dir = h.setup({ "logs/*.log" }, { extra = ", read_from_head = true" })
    local banner = h.numbered("BANNER config line", 1, 60)
    local a = h.numbered("worker-A event", 1, 20)
    run.write(dir .. "/logs/worker-a.log", h.text(banner) .. h.text(a))
    h.start(dir)
    h.wait_lines(dir, 80)
    -- Longer than what was read from worker-a, and shorter.
    local b, c = h.numbered("worker-B event", 1, 40), h.numbered("worker-C event", 1, 3)
    run.write(dir .. "/logs/worker-b.log", h.text(banner) .. h.text(b))
    run.write(dir .. "/logs/worker-c.log", h.text(banner) .. h.text(c))
    h.wait_lines(dir, 243)
    assert.are.equal(0, h.stop(dir))
    local seen = h.count(out_lines(dir))
    for _, line in ipairs(banner) do assert.are.equal(3, seen[line], line) end
    for _, line in ipairs(a) do assert.are.equal(1, seen[line], line) end
    for _, line in ipairs(b) do assert.are.equal(1, seen[line], line) end
    for _, line in ipairs(c) do assert.are.equal(1, seen[line], line) end
    assert.is_nil(run.read(dir .. "/stderr"):find("is a copy", 1, true))
    run.cleanup(dir)
  end)

  it("reads a plain copy of a file (the original not truncated) whole", function()
    local dir = h.setup({ "logs/*.log" })
    run.write(dir .. "/logs/a.log", "")
    h.start(dir)
    local lines = h.numbered("copied line", 1, 50, 40)
    h.append(dir .. "/logs/a.log", h.text(lines))
    h.wait_lines(dir, 50)
    h.sh(dir, "cp logs/a.log logs/b.log")
    h.wait_lines(dir, 100)
    assert.are.equal(0, h.stop(dir))
    local seen = h.count(out_lines(dir))
    for _, line in ipairs(lines) do assert.are.equal(2, seen[line], line) end
    run.cleanup(dir)
  end)

  -- copytruncate of a file under 1 KiB whose new content outgrows the old
  -- before the next look: with and without state_dir, with and without a
  -- pattern matching the copy.
  for _, case in ipairs({
    { name = "with state_dir", patterns = { "logs/app.log" } },
    { name = "with state_dir, the copy matched", patterns = { "logs/app.log", "logs/app.log.*" } },
    { name = "without state_dir", patterns = { "logs/app.log" }, no_state = true },
  }) do
    it("loses nothing when a small file is copytruncated and regrows past its old size, " .. case.name, function()
      local dir = h.setup(case.patterns, { no_state = case.no_state, extra = ", read_from_head = true" })
      local old, new = h.numbered("line", 1, 5, 67), h.numbered("line", 6, 13, 67)
      run.write(dir .. "/logs/app.log", h.text(old))
      h.start(dir)
      h.wait_lines(dir, 5)
      h.sh(dir, "cp logs/app.log logs/app.log.1")
      run.write(dir .. "/logs/app.log", h.text(new)) -- truncates, then writes
      h.wait_lines(dir, 13)
      assert.are.equal(0, h.stop(dir))
      local want = {}
      for _, l in ipairs(old) do want[#want + 1] = l end
      for _, l in ipairs(new) do want[#want + 1] = l end
      assert_whole_once(want, dir)
      run.cleanup(dir)
    end)
  end

  it("reads a file truncated and rewritten past the offset read again from its start, whole", function()
    local dir = h.setup({ "logs/app.log" }, { extra = ", scan_interval_ms = 60000" })
    run.write(dir .. "/logs/app.log", "")
    h.start(dir)
    local before, after = h.numbered("before truncation", 1, 10, 30), h.numbered("after truncation", 1, 30, 30)
    h.append(dir .. "/logs/app.log", h.text(before))
    h.wait_lines(dir, 10)
    run.write(dir .. "/logs/app.log", h.text(after))
    h.wait_lines(dir, 40)
    assert.are.equal(0, h.stop(dir))
    local want = {}
    for _, l in ipairs(before) do want[#want + 1] = l end
    for _, l in ipairs(after) do want[#want + 1] = l end
    assert_whole_once(want, dir)
    assert.matches("app.log was truncated", run.read(dir .. "/stderr"))
    run.cleanup(dir)
  end)

  it("reads a file rewritten past the offset while lumberjit was down, with the same first KiB, from its start", function()
    local dir = h.setup({ "logs/app.log" })
    local banner = h.numbered("BANNER line", 1, 40, 40) -- 1.6 KiB
    local before, after = h.numbered("run 1 line", 1, 10, 40), h.numbered("run 2 line", 1, 30, 40)
    run.write(dir .. "/logs/app.log", "")
    h.start(dir)
    h.append(dir .. "/logs/app.log", h.text(banner) .. h.text(before))
    h.wait_lines(dir, 50)
    assert.are.equal(0, h.stop(dir))
    run.write(dir .. "/logs/app.log", h.text(banner) .. h.text(after)) -- the application restarted
    h.start(dir)
    h.wait_lines(dir, 120)
    assert.are.equal(0, h.stop(dir))
    local seen = h.count(out_lines(dir))
    for _, line in ipairs(banner) do assert.are.equal(2, seen[line], line) end
    local want = {}
    for _, l in ipairs(before) do want[#want + 1] = l end
    for _, l in ipairs(after) do want[#want + 1] = l end
    local got = {}
    for _, l in ipairs(out_lines(dir)) do
      if not l:find("^BANNER") then got[#got + 1] = l end
    end
    local r = h.check(want, got)
    assert.are.same({ 0, 0, 0, 0 }, { r.lost, r.dups, r.torn, r.disorder }, r.text)
    run.cleanup(dir)
  end)

  it("does not hand on a half-written last line as a record when its file is truncated", function()
    local dir = h.setup({ "logs/app.log" }, { last_line_timeout_ms = 60000 })
    run.write(dir .. "/logs/app.log", "")
    h.start(dir)
    h.append(dir .. "/logs/app.log", "first\nsecond\nhalf-writ")
    h.wait_lines(dir, 2)
    h.sleep(0.2) -- the scans see the held line
    run.write(dir .. "/logs/app.log", "new 1\n")
    h.wait_lines(dir, 3)
    h.append(dir .. "/logs/app.log", "new 2\n")
    h.wait_lines(dir, 4)
    assert.are.equal(0, h.stop(dir))
    assert_whole_once({ "first", "second", "new 1", "new 2" }, dir)
    assert.matches("unfinished last line", run.read(dir .. "/stderr"))
    -- What was read of it is a dead letter, with the reason.
    local dead = require("cjson").decode(run.read(dir .. "/dead.log"))
    assert.are.equal("half-writ", dead.payload)
    assert.matches("truncated or rewritten before this line was ended", dead.reason)
    run.cleanup(dir)
  end)

  -- A chain of copytruncates (app.log -> .1 -> .1.2 -> .1.2.3), each copy
  -- written to and read on before the next is made, all within
  -- rotate_wait_ms: each copy holds all its ancestors' bytes. On 630e87f a
  -- copy was read from where the oldest original remembered was read to,
  -- and its parent's lines were delivered again (30 duplicates).
  it("reads a copytruncate copy of a copytruncate copy from where its own original was read to", function()
    local dir = h.setup({ "logs/app.log*" }, { extra = ", rotate_wait_ms = 5000" })
    run.write(dir .. "/logs/app.log", "")
    h.start(dir)
    local want, path = {}, "logs/app.log"
    for gen = 0, 3 do
      if gen > 0 then
        h.sh(dir, string.format("cp %s %s.%d && : > %s", path, path, gen, path))
        path = string.format("%s.%d", path, gen)
        wait_stderr(dir, "is a copy of", gen)
      end
      local lines = h.numbered("generation " .. gen .. " line", 1, 10, 40)
      h.append(dir .. "/" .. path, h.text(lines))
      for _, l in ipairs(lines) do want[#want + 1] = l end
      h.wait_lines(dir, #want)
    end
    assert.are.equal(0, h.stop(dir))
    assert_whole_once(want, dir)
    assert.are.equal(3, h.count_matching(run.read(dir .. "/stderr"), "is a copy of"))
    run.cleanup(dir)
  end)

  it("takes a copy shorter than the offset read for a copy once, not a truncation at every scan", function()
    local dir = h.setup({ "logs/app.log*" })
    run.write(dir .. "/logs/app.log", "")
    h.start(dir)
    local lines = h.numbered("rotated line", 1, 40, 50)
    h.append(dir .. "/logs/app.log", h.text(lines))
    h.wait_lines(dir, 40)
    -- The copy was taken 10 lines before the end: the reader read past it.
    h.sh(dir, "head -n 30 logs/app.log > logs/app.log.1 && : > logs/app.log && echo 'after 1' >> logs/app.log")
    h.wait_lines(dir, 41)
    h.sleep(1) -- 20 scans
    assert.are.equal(0, h.stop(dir))
    lines[#lines + 1] = "after 1"
    assert_whole_once(lines, dir)
    local stderr = run.read(dir .. "/stderr")
    assert.are.equal(1, h.count_matching(stderr, "was truncated"), stderr)
    assert.matches("app.log.1 is a copy of", stderr)
    run.cleanup(dir)
  end)
  -- A file closed as idle and then rewritten in place (truncated and
  -- written again) to the very length read: only its mtime tells. Each
  -- version was lost before (a status file rewritten every few minutes).
  it("reads a file closed as idle again when it is rewritten to the length read", function()
    local dir = h.setup({ "logs/status.log" }, { idle_close_ms = 300 })
    local want = {}
    run.write(dir .. "/logs/status.log", "")
    h.start(dir)
    for version = 1, 3 do
      local lines = h.numbered("status version " .. version .. " line", 1, 20, 40)
      run.write(dir .. "/logs/status.log", h.text(lines))
      for _, l in ipairs(lines) do want[#want + 1] = l end
      h.wait_lines(dir, #want)
      h.sleep(0.8) -- closed as idle
    end
    assert.are.equal(0, h.stop(dir))
    assert_whole_once(want, dir)
    run.cleanup(dir)
  end)

  -- A run that ends with no file followed (none there yet, or all rotated
  -- away) still names its input in the state file, so the next run takes
  -- what it finds for files that came while lumberjit was down. Before,
  -- the next run started them at their end: every line lost.
  for _, case in ipairs({
    { name = "the run before followed no file", before = nil },
    { name = "the file the run before followed was deleted", before = "rm logs/app.log" },
    { name = "the file the run before followed was moved away", before = "mkdir old && mv logs/app.log old/" },
  }) do
    it("reads from its head a file that came while lumberjit was down, " .. case.name, function()
      local dir = h.setup({ "logs/*.log" })
      local old = h.numbered("before line", 1, 5)
      if case.before then run.write(dir .. "/logs/app.log", "") end
      h.start(dir)
      if case.before then
        h.append(dir .. "/logs/app.log", h.text(old))
        h.wait_lines(dir, 5)
        h.sh(dir, case.before)
        h.sleep(1.2) -- rotate_wait_ms (500): it is let go
      end
      assert.are.equal(0, h.stop(dir))
      local new = h.numbered("came while down line", 1, 10)
      run.write(dir .. "/logs/app.log", h.text(new))
      h.start(dir)
      local want = case.before and old or {}
      for _, l in ipairs(new) do want[#want + 1] = l end
      h.wait_lines(dir, #want)
      assert.are.equal(0, h.stop(dir))
      assert_whole_once(want, dir)
      run.cleanup(dir)
    end)
  end
  -- A file that leaves the patterns while the events rest (read_interval_ms,
  -- here 5 s, the scans a minute apart): rotated out and deleted half a
  -- second after it came, under a fast writer's rotation. It was lost whole:
  -- its creation was read once it was gone. The directories' events never
  -- rest now, so it is opened when it comes, and read from that descriptor.
  it("reads a file that came and went while the events rested", function()
    local dir = h.setup({ "logs/other.log", "logs/app.log" },
      { extra = ", read_interval_ms = 5000, scan_interval_ms = 60000" })
    run.write(dir .. "/logs/other.log", "")
    h.start(dir)
    local lines = h.numbered("short-lived line", 1, 50, 40)
    run.write(dir .. "/lines", h.text(lines))
    -- A write to a followed file starts a rest; the file comes within it.
    h.sh(dir, "echo 'other 1' >> logs/other.log; sleep 0.1; cp lines logs/app.log; sleep 0.5; "
      .. "mv logs/app.log logs/app.log.1; sleep 0.1; rm logs/app.log.1")
    table.insert(lines, 1, "other 1")
    h.wait_lines(dir, #lines)
    assert.are.equal(0, h.stop(dir))
    assert_whole_once(lines, dir)
    run.cleanup(dir)
  end)
end)
