-- Power loss on an edge box (issue 28, §3): lumberjit tails a file into a
-- syslog_output whose receiver is away, so its records go to the disk
-- buffer; it is stopped with kill -9 mid-stream, and then its state is
-- damaged as a power cut on an SD card leaves it: the checkpoint file, the
-- disk buffer's cursor and one of its segments cut at a random byte offset,
-- with bytes changed in the tail before the cut (a torn write). The next
-- run, with the receiver up, must start, say what it repaired, and lose
-- nothing but what the damage took.
--
-- The oracle, per round (seeded: POWER_CUT_SEED; POWER_CUT_ROUNDS, 8 by
-- default, 4 on an ASan build; POWER_CUT_KEEP keeps each round's directory):
--   * the damaged segment is parsed before the damage; its first damaged
--     byte d is the cut or the first changed byte, whichever comes first.
--     Every record with a byte at or past d is "lost by the cut" (a torn
--     tail ends the segment: nothing after it can be trusted). If d falls
--     in the segment's header, all its records are.
--   * every line written that is not lost by the cut arrives; a line lost
--     by the cut may arrive too (a damaged checkpoint reads the file again
--     from its head: duplicates, never a loss); nothing else arrives (no
--     torn or merged line).
--   * lumberjit logs one line naming the segment and what it dropped: a
--     torn tail cut at the first damaged record (the bytes exactly; the
--     records exactly unless the damage changed a length field of them,
--     which the count follows), a corrupt earlier segment likewise, a
--     segment cut inside its header deleted, or one whose header changed
--     moved aside.
--   * a checkpoint file or cursor cut short is said to be damaged.
--   * the second run exits 0 on SIGTERM.
local h = dofile("spec/e2e/syslog_harness.lua")
local run = dofile("spec/e2e/run.lua")
local pc = dofile("spec/e2e/power_cut.lua")

-- Fewer on an AddressSanitizer build, which runs each round slower.
local ROUNDS = tonumber(os.getenv("POWER_CUT_ROUNDS") or (run.asan_runtime() and "4" or "8"))
local SEED = tonumber(os.getenv("POWER_CUT_SEED") or "1")
local LINES = 3000

-- A receiver that appends each whole line a connection sends to out.log.
local RECEIVER = [[
import socket, sys, threading
lock = threading.Lock()
out = open("out.log", "ab", buffering=0)
def serve(c):
    held = b""
    while True:
        data = c.recv(65536)
        if not data:
            return
        held += data
        cut = held.rfind(b"\n") + 1
        with lock:
            out.write(held[:cut])
        held = held[cut:]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
open("receiver.ready", "w").close()
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
]]

local function config(port)
  return 'lumberjit = { dead_letter_path = "dead.log", state_dir = "state", checkpoint_interval_ms = 20, '
    .. 'stop_timeout_ms = 2000 }\n'
    .. 'app = { type = "tail_input", paths = { "in.log" }, scan_interval_ms = 20 }\n'
    .. 'fwd = { type = "syslog_output", message_matcher = "TRUE", framing = "newline", '
    .. 'address = "tcp://127.0.0.1:' .. port .. '", reconnect_min_ms = 20, reconnect_max_ms = 100, '
    .. 'disk_buffer = { path = "buffer", segment_bytes = 16384 } }\n'
end

local totals = { rounds = 0, lost = 0, arrived = 0, duplicates = 0, segment_repairs = 0,
                 checkpoint_repairs = 0, cursor_repairs = 0, written = 0, examples = {} }

-- One round: returns nothing; asserts the oracle.
local function round(seed)
  math.randomseed(seed)
  local dir = h.tmpdir()
  local port = run.free_ports()
  local expected = {}
  for i = 1, LINES do
    expected[i] = string.format("pc%d %06d %s", seed, i, string.rep("x", math.random(0, 120)))
  end
  run.write(dir .. "/expected.log", table.concat(expected, "\n") .. "\n")
  run.write(dir .. "/receiver.py", RECEIVER)
  run.write(dir .. "/writer.py", pc.WRITER)
  run.write(dir .. "/config.lua", config(port))
  h.sh(dir, "mkdir state")

  -- Run 1: the receiver is away; in.log appears once lumberjit runs (so
  -- it is read from its head), and lumberjit dies mid-stream.
  h.spawn(dir, "lumberjit", run.quote(run.bin) .. " -c config.lua", 60)
  assert(h.wait_until(function() return (run.read(dir .. "/lumberjit.err") or ""):find("reconnecting") end, 10),
    run.read(dir .. "/lumberjit.err"))
  h.spawn(dir, "writer", "python3 writer.py", 30)
  -- Once the state file knows in.log: a crash before that is the first
  -- run's, which knows nothing of the file to resume (README: Power loss).
  assert(h.wait_until(function() return (run.read(dir .. "/state/checkpoints") or ""):find("file in.log") end, 10))
  h.sleep(string.format("%.3f", math.random(0, 500) / 1000))
  pc.kill9(dir, "lumberjit")
  assert.are.equal(0, h.wait_exit(dir, "writer", 30))

  -- The power cut: a segment, the checkpoint file and the cursor.
  local what = {}
  local lost = {}
  local seg_damage = pc.cut_segment(dir .. "/buffer", lost, what)
  local checkpoint_cut = pc.damage_file(dir .. "/state/checkpoints", "checkpoints", what)
  local cursor_cut = pc.damage_file(dir .. "/buffer/cursor", "cursor", what)

  -- Run 2: the receiver is up.
  h.spawn(dir, "receiver", "python3 receiver.py " .. port, 60)
  assert(h.wait_until(function() return run.read(dir .. "/receiver.ready") end, 10))
  h.spawn(dir, "lumberjit2", run.quote(run.bin) .. " -c config.lua", 60)
  local want = {}
  for _, line in ipairs(expected) do
    if not lost[line] then want[#want + 1] = line end
  end
  local seen
  local function all_arrived()
    seen = {}
    for _, line in ipairs(run.lines(run.read(dir .. "/out.log"))) do seen[line] = (seen[line] or 0) + 1 end
    for _, line in ipairs(want) do
      if not seen[line] then return false end
    end
    return true
  end
  local arrived = h.wait_until(all_arrived, 30)
  local status = h.terminate(dir, "lumberjit2", 30)
  h.terminate(dir, "receiver", 10)
  local log = run.read(dir .. "/lumberjit2.err") or ""
  local context = "seed " .. seed .. " in " .. dir .. ": " .. table.concat(what, "; ") .. "\n" .. log
  assert.are.equal(0, status, context)
  assert.is_true(arrived, context)

  -- Nothing but written lines arrived.
  local duplicates, got = 0, 0
  local written = {}
  for _, line in ipairs(expected) do written[line] = true end
  all_arrived()
  for line, n in pairs(seen) do
    assert.is_true(written[line] ~= nil, "torn or merged: " .. line .. "\n" .. context)
    duplicates = duplicates + n - 1
    got = got + 1
  end

  if seg_damage and pc.check_segment(seg_damage, log, context) then
    totals.segment_repairs = totals.segment_repairs + 1
  end
  -- The first line of each kind of repair goes to the report at the end.
  pc.count_repairs(totals, checkpoint_cut, cursor_cut, log, context)
  local n_lost = 0
  for line in pairs(lost) do
    if not seen[line] then n_lost = n_lost + 1 end
  end
  totals.rounds = totals.rounds + 1
  totals.written = totals.written + #expected
  totals.lost = totals.lost + n_lost
  totals.arrived = totals.arrived + got
  totals.duplicates = totals.duplicates + duplicates
  if os.getenv("POWER_CUT_KEEP") then io.stderr:write(dir, "\n") else h.cleanup(dir) end
end

describe("a power cut", function()
  it("on the checkpoint file and the disk buffer loses only what it cut, and says what it repaired", function()
    -- Every round runs, so that a long run reports all that failed.
    local failed = {}
    for r = 0, ROUNDS - 1 do
      local ok, err = pcall(round, SEED + r)
      if not ok then failed[#failed + 1] = tostring(err) end
    end
    io.stderr:write(string.format("\npower cut: %d rounds from seed %d, %d passed; %d lines written, %d "
      .. "arrived (%d more times as duplicates), %d lost by the cut; repaired %d segments, %d checkpoint "
      .. "files, %d cursors\n", ROUNDS, SEED, totals.rounds, totals.written, totals.arrived,
      totals.duplicates, totals.lost, totals.segment_repairs, totals.checkpoint_repairs,
      totals.cursor_repairs))
    for _, line in pairs(totals.examples) do io.stderr:write("  ", line, "\n") end
    assert.are.same({}, failed)
  end)
end)
