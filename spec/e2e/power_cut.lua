-- What power_cut_spec.lua and kafka_power_cut_spec.lua share: a power cut
-- as an SD card leaves the state (a file cut at a random byte offset, with
-- bytes changed in the 256 before the cut), the disk buffer's segments
-- read as the disk queue writes them (src/storage/disk_queue.c), which
-- records a cut segment loses, and the check of what lumberjit logs of its
-- repair, and the writer and the kill -9 of a round. Both outputs' disk
-- buffers hold the same records: [u16 input name length][input name][u64
-- position][u8 flags][u32 head][head][line].
-- Every draw is from math.random, in the order the specs made them when
-- this was power_cut_spec's own, so a seed still replays its round.
local run = dofile("spec/e2e/run.lua")
local h = dofile("spec/e2e/syslog_harness.lua")
local assert = require("luassert")

local pc = {}

-- Copies expected.log to in.log a chunk at a time, so the kill lands
-- mid-stream (the spec runs it as writer.py in the round's directory).
pc.WRITER = [[
import time
lines = open("expected.log", "rb").read().splitlines(True)
with open("in.log", "ab", buffering=0) as f:
    for i in range(0, len(lines), 40):
        f.write(b"".join(lines[i:i + 40]))
        time.sleep(0.004)
]]

-- kill -9 of what `name` (started by syslog_harness's spawn) runs, not of
-- the timeout wrapping it; its exit status.
function pc.kill9(dir, name)
  h.sh(dir, "pid=$(cat " .. name .. ".pid); kill -KILL $(cat /proc/$pid/task/$pid/children) 2>/dev/null")
  return h.wait_exit(dir, name, 10)
end

function pc.u32(s, at)
  local a, b, c, d = s:byte(at + 1, at + 4)
  return a + b * 256 + c * 65536 + d * 16777216
end
local u32 = pc.u32

-- The records of a segment's bytes: { start, stop (past its end), line }.
function pc.parse_segment(bytes)
  local recs, off = {}, 8
  while off + 8 <= #bytes do
    local len = u32(bytes, off)
    if off + 8 + len > #bytes then break end
    local p = bytes:sub(off + 9, off + 8 + len)
    local name_len = p:byte(1) + p:byte(2) * 256
    local head = u32(p, 2 + name_len + 9)
    local line = p:sub(2 + name_len + 14 + head):gsub("\n$", "")
    recs[#recs + 1] = { start = off, stop = off + 8 + len, line = line }
    off = off + 8 + len
  end
  return recs
end

-- The records the disk queue counts from off on (disk_queue.c's
-- records_from): the one there, then while the lengths stay in the file.
function pc.records_from(bytes, off)
  local n = 0
  while off < #bytes do
    n = n + 1
    if #bytes - off < 8 then break end
    local len = u32(bytes, off)
    if len > #bytes - off - 8 then break end
    off = off + 8 + len
  end
  return n
end

-- Cuts bytes at a random offset and changes up to 3 bytes of the 256
-- before the cut. Returns the damaged bytes, the cut, and the changed
-- offsets (0-based, sorted).
function pc.damage(bytes)
  local cut = math.random(0, #bytes)
  local out = bytes:sub(1, cut)
  local changed = {}
  if cut > 0 then
    for _ = 1, math.random(0, 3) do
      local at = math.random(math.max(0, cut - 256), cut - 1)
      local byte = (out:byte(at + 1) + math.random(1, 255)) % 256
      out = out:sub(1, at) .. string.char(byte) .. out:sub(at + 2)
      changed[#changed + 1] = at
    end
  end
  table.sort(changed)
  return out, cut, changed
end

-- The names in dir that match the shell pattern, sorted.
function pc.listing(dir, pattern)
  local names = {}
  local p = io.popen("cd " .. run.quote(dir) .. " 2>/dev/null && ls " .. pattern .. " 2>/dev/null")
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  table.sort(names)
  return names
end

-- Mostly (9 times in 10) damages one segment of the disk buffer in
-- `buffer` (the last one mostly, as a cut hits what was written last),
-- parsed before the damage; its first damaged byte d is the cut or the
-- first changed byte, whichever comes first. Every record with a byte at or
-- past d is lost by the cut (a torn tail ends the segment: nothing after
-- it can be trusted); all of them if d falls in the header. Marks their
-- lines in `lost`, adds a phrase to `what`, and returns what check_segment
-- needs (nil when no segment was damaged).
function pc.cut_segment(buffer, lost, what)
  local segs = pc.listing(buffer, "*.seg")
  if #segs == 0 or math.random() >= 0.9 then return nil end
  local name = segs[math.random() < 0.75 and #segs or math.random(1, #segs)]
  local path = buffer .. "/" .. name
  local before = run.read(path)
  local after, cut, changed = pc.damage(before)
  run.write(path, after)
  local d = math.min(cut, changed[1] or cut)
  local recs = pc.parse_segment(before)
  -- The last segment when the disk queue opens: those after it that
  -- hold no header yet (a kill as one was made) are deleted first.
  local last = true
  for _, later in ipairs(segs) do
    if later > name and run.size(buffer .. "/" .. later) >= 8 then last = false end
  end
  local seg = { name = name, last = last, size = #after, d = d, header = d < 8,
                records = 0, visible = 0, lengths_changed = false }
  local first_lost
  for _, r in ipairs(recs) do
    if r.stop > d or d < 8 then
      lost[r.line] = true
      seg.records = seg.records + 1
      first_lost = first_lost or r
      if r.start < #after then seg.visible = seg.visible + 1 end
      for _, at in ipairs(changed) do
        if at >= r.start and at < r.start + 4 then seg.lengths_changed = true end
      end
    end
  end
  -- Where lumberjit cuts: the first record that is not whole and good.
  seg.cut_at = first_lost and first_lost.start or nil
  if seg.cut_at and seg.cut_at >= #after then seg.cut_at = nil end
  if seg.cut_at then seg.count = pc.records_from(after, seg.cut_at) end
  what[#what + 1] = string.format("%s cut at %d of %d, %d bytes changed, %d records lost", name, cut,
    #before, #changed, seg.records)
  return seg
end

-- Damages the file at path 6 times in 10 (nil when not, or when it is
-- missing); true when the cut took more than its last byte (a cut of the
-- final newline alone may leave it readable).
function pc.damage_file(path, key, what)
  local before = run.read(path)
  if not before or math.random() >= 0.6 then return nil end
  local after, cut, changed = pc.damage(before)
  run.write(path, after)
  what[#what + 1] = string.format("%s cut at %d of %d, %d bytes changed", key, cut, #before, #changed)
  return cut <= #before - 2
end

-- Asserts the line the disk queue logged of seg's repair: a segment cut inside its header deleted, one
-- whose header changed moved aside, else the bytes cut exactly, and the
-- records exactly unless a length field changed (the count follows them).
-- True when there was something to repair.
function pc.check_segment(seg, log, context)
  local n = seg.name:gsub("%.", "%%.")
  if seg.header and seg.size < 8 and seg.d == seg.size then
    -- Cut inside its header, nothing changed: deleted, if it was not
    -- empty of bytes too (a file of no bytes is a header's beginning).
    assert.truthy(log:find("deleted segment %d+, whose creation a crash cut short"), context)
  elseif seg.header then
    assert.truthy(log:find(n .. " does not start with the header"), context)
  elseif seg.cut_at then
    local bytes, records
    if seg.last then
      bytes, records = log:match("cut (%d+) bytes off the end of " .. n .. " at offset %d+, (%d+) records")
    else
      records, bytes = log:match(n .. " is corrupt at offset %d+: cut there, losing (%d+) records %((%d+) bytes%)")
    end
    assert.truthy(bytes, context)
    assert.are.equal(seg.size - seg.cut_at, tonumber(bytes), context)
    assert.are.equal(seg.count, tonumber(records), context)
    if not seg.lengths_changed then
      assert.are.equal(seg.visible, tonumber(records), context)
    end
  end
  return seg.cut_at ~= nil or seg.header
end

-- A cut checkpoint file and a cut cursor were each repaired, as the log
-- says: counted in totals, and the first warning of each kind of repair
-- noted in totals.examples.
function pc.count_repairs(totals, checkpoint_cut, cursor_cut, log, context)
  if checkpoint_cut then
    assert.truthy(log:find("checkpoint [^\n]*: damaged"), context)
    totals.checkpoint_repairs = totals.checkpoint_repairs + 1
  end
  if cursor_cut then
    assert.truthy(log:find("cannot use its cursor file"), context)
    totals.cursor_repairs = totals.cursor_repairs + 1
  end
  pc.note_repairs(log, totals.examples)
end

-- Notes in examples the first warning of each kind of repair in log.
function pc.note_repairs(log, examples)
  for line in log:gmatch("[^\n]*warning[^\n]*") do
    local kind = line:match("(cut %d+ bytes off the end)") and "torn tail" or line:match("is corrupt") and "corrupt"
      or line:match("deleted segment") and "deleted" or line:match("does not start") and "moved aside"
      or line:match("checkpoint .*damaged") and "checkpoint" or line:match("cursor file") and "cursor" or line
    examples[kind] = examples[kind] or line:gsub("^%S+ ", "")
  end
end

return pc
