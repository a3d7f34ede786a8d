-- tail_input short of file descriptors or permissions (issue 22, sections
-- 3 and 5): a file it cannot open now waits, counted and logged once, and
-- is read once it can be; never skipped, never read twice. Both failed on
-- 8a07ef3: under ulimit -n 256, 500 files gave 516 lines never read and
-- thousands duplicated (the checkpoint could not be written); an
-- unreadable file was passed over without a word.
local h = dofile("spec/e2e/tail_harness.lua")
local run = h.run

-- A metric's value in the metrics file, for the input 'app'.
local function metric(dir, name)
  local text = run.read(dir .. "/metrics.prom") or ""
  return tonumber(text:match(name .. '{input="app"} (%d+)'))
end

describe("tail_input resources", function()
  it("reads 500 files once each with 256 file descriptors, holding those it has none for", function()
    local dir = h.setup({ "logs/*.log" }, { idle_close_ms = 200, global = 'metrics_path = "metrics.prom",',
                                            extra = ", read_from_head = true" })
    local want = {}
    for i = 1, 500 do
      local lines = { "file " .. i .. " line 1", "file " .. i .. " line 2" }
      run.write(dir .. "/logs/f" .. i .. ".log", h.text(lines))
      for _, l in ipairs(lines) do want[#want + 1] = l end
    end
    -- dash's ulimit sets the hard limit too: lumberjit cannot raise it.
    h.start(dir, { prefix = "ulimit -n 256;" })
    h.wait_lines(dir, 1000)
    assert.are.equal(0, h.stop(dir))
    local r = h.check(want, run.lines(run.read(dir .. "/out.log")))
    -- Files are read side by side: order only holds within a file, and
    -- each has its lines in one read.
    assert.are.same({ 0, 0, 0 }, { r.lost, r.dups, r.torn }, r.text)
    local stderr = run.read(dir .. "/stderr")
    assert.are.equal(1, h.count_matching(stderr, "no file descriptor free"), stderr)
    assert.is_nil(stderr:find("Too many open files", 1, true))
    assert.is_true(metric(dir, "lumberjit_tail_waiting_files_total") > 0)
    run.cleanup(dir)
  end)

  -- Descriptors running out under the budget (here a soft limit lowered
  -- at runtime below those open; another library or a burst of sockets
  -- would do as well): the checkpoint cannot be written, nor logs/ listed
  -- (glob opens it). On bc7d173 each scan that could not list it took its
  -- files for gone (their offsets retired), and the first that could found
  -- them as new, read from their head: 200 of 400 lines duplicated, and
  -- the checkpoint's failure logged at every try.
  it("keeps its files, their offsets and the last checkpoint when descriptors run out under it", function()
    local dir = h.setup({ "logs/*.log" }, { extra = ", read_from_head = true" })
    local want = {}
    local function write_round(round)
      for i = 1, 100 do
        local line = "file " .. i .. " line " .. round
        h.append(dir .. "/logs/f" .. i .. ".log", line .. "\n")
        want[#want + 1] = line
      end
    end
    local function stderr() return run.read(dir .. "/stderr") or "" end
    local function wait_logged(pattern)
      for _ = 1, 400 do
        if h.count_matching(stderr(), pattern) > 0 then return end
        h.sleep(0.05)
      end
    end
    write_round(1)
    h.start(dir, { prefix = "ulimit -n 256;" })
    h.wait_lines(dir, 100)
    -- The 100 files stay open (idle_close_ms is a minute). A soft limit
    -- of 3 leaves no descriptor to open anything, whatever numbers are free
    -- past the standard streams.
    local pid = h.lumberjit_pid(dir)
    h.sh(dir, "prlimit --pid " .. pid .. " --nofile=3:256")
    write_round(2) -- read on the open descriptors, acknowledged, not saved
    h.wait_lines(dir, 200)
    wait_logged("cannot write it: Too many open files")
    wait_logged("cannot list logs: Too many open files")
    h.sh(dir, "prlimit --pid " .. pid .. " --nofile=256:256")
    wait_logged("written again")
    write_round(3)
    h.wait_lines(dir, 300)
    assert.are.equal(0, h.stop(dir))
    local log = stderr()
    -- The next run starts where this one's acknowledgements got to.
    write_round(4)
    h.start(dir, { prefix = "ulimit -n 256;" })
    h.wait_lines(dir, 400)
    assert.are.equal(0, h.stop(dir))
    local r = h.check(want, run.lines(run.read(dir .. "/out.log")))
    assert.are.same({ 0, 0, 0 }, { r.lost, r.dups, r.torn }, r.text)
    -- Logged once while it lasts, and its end.
    assert.are.equal(1, h.count_matching(log, "cannot write it: Too many open files"), log)
    assert.are.equal(1, h.count_matching(log, "cannot list logs: Too many open files"), log)
    assert.are.equal(1, h.count_matching(log, "checkpoint state/checkpoints: written again"), log)
    run.cleanup(dir)
  end)

  it("logs an unreadable file once, counts it, and reads it once it is readable", function()
    local dir = h.setup({ "logs/*.log" }, { global = 'metrics_path = "metrics.prom",' })
    local wrap = ""
    -- root reads a file whatever its mode: run lumberjit as nobody.
    if io.popen("id -u"):read("*l") == "0" then
      h.sh(dir, "chmod -R 777 .")
      wrap = "setpriv --reuid=65534 --regid=65534 --clear-groups"
    end
    h.start(dir, { wrap = wrap })
    h.sh(dir, "umask 777; printf 'secret 1\\nsecret 2\\n' > logs/secret.log")
    h.sh(dir, "printf 'open 1\\n' > logs/open.log")
    h.wait_lines(dir, 1)
    h.sleep(0.5) -- 10 scans
    h.sh(dir, "chmod 644 logs/secret.log")
    h.wait_lines(dir, 3)
    assert.are.equal(0, h.stop(dir))
    assert.are.same({ ["open 1"] = 1, ["secret 1"] = 1, ["secret 2"] = 1 },
                    h.count(run.lines(run.read(dir .. "/out.log"))))
    local stderr = run.read(dir .. "/stderr")
    assert.are.equal(1, h.count_matching(stderr, "cannot read logs/secret.log: Permission denied"), stderr)
    assert.are.equal(1, metric(dir, "lumberjit_tail_unreadable_files_total"))
    assert.matches("input 'app': 0 files waited for a free slot or file descriptor, 1 could not be read", stderr)
    run.cleanup(dir)
  end)
end)
